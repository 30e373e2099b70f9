#include "services/status-sink/intake/manifest_payloads.h"

#include <algorithm>
#include <set>
#include <utility>

#include "libs/cloudevents/manifest_bundle.h"
#include "services/status-sink/metrics/sink_log.h"

namespace mmi::status_sink {

absl::Status ManifestPayloads::Load(store::StatusStore& store,
                                    const std::vector<store::HubAppRef>& refs) {
  std::vector<std::string> ids;
  std::set<std::string> wanted;
  for (const auto& ref : refs) {
    if (ref.manifest && !Holds(ref.manifest->payload_hash) &&
        wanted.insert(ref.manifest->payload_hash).second) {
      ids.push_back(ref.resource_id);  // one resource per missing hash is enough
    }
  }
  if (ids.empty()) {
    return absl::OkStatus();
  }
  auto payloads = store.LookupPayloads(ids);
  if (!payloads.ok()) {
    return payloads.status();
  }
  for (const auto& payload : *payloads) {
    auto bundle = cloudevents::DecodeManifestBundle(payload.payload);
    if (!bundle.ok()) {
      SinkLog().Warn("the dispatched payload of a resource in manifest delivery is not a bundle",
                     {{"resource", payload.resource_id}, {"error", bundle.status().ToString()}});
      continue;
    }
    Insert(payload.payload_hash, std::make_shared<const Manifests>(std::move(bundle->manifests)));
  }
  return absl::OkStatus();
}

std::shared_ptr<const Manifests> ManifestPayloads::Find(const std::string& payload_hash) {
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(payload_hash);
  if (it == entries_.end()) {
    return nullptr;
  }
  it->second.used = ++uses_;
  return it->second.manifests;
}

std::size_t ManifestPayloads::size() const {
  absl::MutexLock lock(&mu_);
  return entries_.size();
}

bool ManifestPayloads::Holds(const std::string& payload_hash) const {
  absl::MutexLock lock(&mu_);
  return entries_.count(payload_hash) > 0;
}

void ManifestPayloads::Insert(const std::string& payload_hash,
                              std::shared_ptr<const Manifests> manifests) {
  absl::MutexLock lock(&mu_);
  entries_[payload_hash] = Entry{std::move(manifests), ++uses_};
  if (entries_.size() <= max_payloads_) {
    return;
  }
  // O(entries) per eviction: it only runs when more distinct renders are live than the bound.
  auto oldest =
      std::min_element(entries_.begin(), entries_.end(),
                       [](const auto& a, const auto& b) { return a.second.used < b.second.used; });
  entries_.erase(oldest);
}

}  // namespace mmi::status_sink
