// InformerStore: the cache behind an Informer: how one object is kept (a shared JSON tree, or
// MessagePack bytes), the objects by key, the version the cache reflects, the synced flag and
// the informer's counters. It decides what a list or a watch event changes; it never calls
// handlers and does no I/O (the Informer notifies handlers with what these methods return).
//
// The per-object representation (Entry, MakeEntry, Materialize, VersionOf) and the relist
// reconcile (Reconcile) live only here, so a different representation or a relist that marks
// and sweeps in place changes this file, not the watch or the list code.
//
// Thread-safe: one mutex guards everything. Lock order: ListBuffer's mutex before this one.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "libs/kube/kube_client.h"
#include "nlohmann/json.hpp"

namespace prometheus {
class Gauge;
}  // namespace prometheus

namespace mmi::kube {
struct InformerStats;
}  // namespace mmi::kube

namespace mmi::kube::internal {

// An immutable cached object, shared by the cache, handlers and readers (see informer.h).
using StoredObject = std::shared_ptr<const nlohmann::json>;

// One cached object: a shared tree, or (compact storage) MessagePack bytes plus its version.
struct Entry {
  StoredObject object;
  std::string packed;
  std::string resource_version;
  // Only in a list: the cache already holds this very version, so the list carries this marker
  // (with its version) and Reconcile keeps the cached entry: a relist never holds a second copy
  // of the unchanged objects (nearly all of them).
  bool same_as_cached = false;
};

// A complete list in list order: key and entry ("" key: deleted before a streamed list ended).
using ListedEntries = std::vector<std::pair<std::string, Entry>>;

// What a list changed in the cache, for the handlers.
struct ReconcileResult {
  std::vector<std::string> added;                      // keys, read back when notifying
  std::vector<std::pair<Entry, std::string>> updated;  // old entry, key
  std::vector<Entry> deleted;                          // last cached state
  bool first_sync = false;                             // the first list: synced once notified
  int64_t lists = 0;                                   // lists so far, this one included
};

// What a watch event changed in the cache.
struct ChangeResult {
  bool applied = false;      // false: stale, or this very version is cached already
  std::optional<Entry> old;  // the replaced or deleted entry; none for an add
};

class InformerStore {
 public:
  struct Settings {
    std::function<void(nlohmann::json&)> transform;  // optional; see InformerSettings
    bool compact_storage = false;
    std::string resource;  // for log lines
  };
  // `objects` (nullable) is set to the cache size on every change; it must outlive the store.
  InformerStore(Settings settings, prometheus::Gauge* objects);
  ~InformerStore();
  InformerStore(const InformerStore&) = delete;
  InformerStore& operator=(const InformerStore&) = delete;

  // Transform, then share: the form every object takes before the cache or a handler sees it.
  StoredObject Prepare(nlohmann::json&& object) const;
  Entry MakeEntry(const StoredObject& object) const;
  // The object an entry holds (decoded when compact). Aborts on bytes it cannot read back.
  StoredObject Materialize(const Entry& entry) const;
  static std::string VersionOf(const Entry& entry);
  // The entry a list carries for `object` (key `key`): a same_as_cached marker when the cache
  // holds this version (nothing is transformed or copied), else MakeEntry(Prepare(object)),
  // the prepared object then left in `prepared` when given.
  Entry MakeListedEntry(const std::string& key, nlohmann::json&& object,
                        StoredObject* prepared = nullptr) const;
  // A same_as_cached marker for the entry cached at `resource_version`.
  static Entry MarkerAt(std::string resource_version);

  // nullptr when absent.
  StoredObject Get(const std::string& key) const;
  // Every object whose key starts with `prefix` ("" = all).
  std::vector<StoredObject> List(const std::string& prefix) const;
  // The keys of those objects: no entry is copied or decoded.
  std::vector<std::string> Keys(const std::string& prefix) const;
  std::string ResourceVersionOf(const std::string& key) const;
  size_t Size() const;
  std::string ResourceVersion() const;
  void SetResourceVersion(std::string resource_version);
  bool Synced() const;
  bool WaitForSynced(std::chrono::milliseconds timeout) const;
  void MarkSynced();
  InformerStats Stats() const;
  // Changes the counters under the cache's lock (so they agree with the cache it guards).
  void Count(const std::function<void(InformerStats&)>& change);

  // Keys the watch changed while a list was read, each with the version of its newest event.
  using TouchedKeys = absl::flat_hash_map<std::string, std::string>;

  // Replaces the cache with a complete list at `resource_version`, in place: entries of
  // unchanged version are kept (readers may hold them), changed ones are replaced and unlisted
  // ones removed (both handed back in the result). `touched` keys keep what the cache holds (the
  // watch's state is newer than the list's, listed or not), unless the list holds a numerically
  // newer version (a list that continued at a newer state). A same_as_cached marker of an
  // untouched key whose entry is not cached at that version is a bug (while a list is collected
  // only the watch changes the cache, touching what it changes, and a first list's delivered
  // pages, marking what they cached) and aborts.
  ReconcileResult Reconcile(ListedEntries listed, const std::string& resource_version,
                            bool streamed, const TouchedKeys& touched = {});
  // After a list that continued at a newer state: the newest (numeric) version its pages held.
  void GuardStaleEvents(int64_t newest_listed_version);
  // A listed object cached before its list is complete (Informer::DeliverListed): stores
  // `entry` (moved from) when `key` is absent and returns true; false leaves `entry` as it was.
  bool AddListed(const std::string& key, Entry& entry);
  // Applies one watch event. For kDeleted `entry` is ignored.
  ChangeResult Apply(WatchEventType type, std::string key, std::string resource_version,
                     Entry entry);

 private:
  // While the watch catches up with an inconsistent list: the cache holds a newer version of
  // `key` than `version`.
  bool IsOlderThanCached(const std::string& key, const std::string& version)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void UpdateSizeGauge() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Aborts unless `cached` holds the version a same_as_cached `marker` was made for.
  void CheckStillCached(absl::flat_hash_map<std::string, Entry>::const_iterator cached,
                        const Entry& marker) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Settings settings_;
  prometheus::Gauge* const objects_gauge_;

  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Entry> objects_ ABSL_GUARDED_BY(mu_);
  std::string resource_version_ ABSL_GUARDED_BY(mu_);
  // Non-zero after a list continued at a newer state: the newest (numeric) version its pages
  // held. Until the watch delivers it, a watch event older than the cached object is dropped.
  int64_t stale_guard_version_ ABSL_GUARDED_BY(mu_) = 0;
  bool synced_ ABSL_GUARDED_BY(mu_) = false;
  std::unique_ptr<InformerStats> stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace mmi::kube::internal
