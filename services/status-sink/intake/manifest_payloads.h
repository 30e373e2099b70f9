// The rendered manifests of resources in manifest delivery, by dispatched payload hash. One
// render's bundle is the same bytes for every cluster it goes to (3,000 resources on one source
// at 300,000 Applications on 100 sources), so the manifests are parsed once per payload hash and
// shared, never held per resource. Loaded on the store executor along with the resources'
// lookup (HubApps); read on the loop when a report is turned into a status.
//
// Bounded: beyond `max_payloads` hashes the least recently used one is evicted; a resource whose
// payload is gone is looked up again (HubApps), which loads it back.
//
// Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "libs/store/status_store.h"
#include "nlohmann/json.hpp"

namespace mmi::status_sink {

using Manifests = std::vector<nlohmann::json>;

class ManifestPayloads {
 public:
  explicit ManifestPayloads(std::size_t max_payloads) : max_payloads_(max_payloads) {}

  // Loads the payloads of the manifest-delivery resources among `refs` whose payload hash is not
  // held, through `store` (blocking: call on the store executor): one resource per hash, and when
  // its bundle changed since `refs` were read, up to kMaxRetriesPerHash others of that hash. A
  // payload that is not a ManifestBundle is not held (the status is then not built: logged, as
  // for a missing one); store errors are returned.
  absl::Status Load(store::StatusStore& store, const std::vector<store::HubAppRef>& refs);
  // The manifests of `payload_hash`; null when not held.
  std::shared_ptr<const Manifests> Find(const std::string& payload_hash);

  std::size_t size() const;

  static constexpr std::size_t kMaxRetriesPerHash = 8;

 private:
  struct Entry {
    std::shared_ptr<const Manifests> manifests;
    uint64_t used = 0;  // use order, for eviction
  };
  bool Holds(const std::string& payload_hash) const;
  void Insert(const std::string& payload_hash, std::shared_ptr<const Manifests> manifests);

  const std::size_t max_payloads_;
  mutable absl::Mutex mu_;
  std::unordered_map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
  uint64_t uses_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace mmi::status_sink
