#include "libs/kube/internal/informer_store.h"

#include <cstdlib>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/time/time.h"
#include "libs/common/log.h"
#include "libs/kube/informer_settings.h"
#include "libs/kube/internal/loggers.h"
#include "libs/kube_object/object.h"
#include "prometheus/gauge.h"

namespace mmi::kube::internal {
namespace {

const log::Logger& Log() { return InformerLog(); }

}  // namespace

InformerStore::InformerStore(Settings settings, prometheus::Gauge* objects)
    : settings_(std::move(settings)),
      objects_gauge_(objects),
      stats_(std::make_unique<InformerStats>()) {}

InformerStore::~InformerStore() = default;

StoredObject InformerStore::Prepare(nlohmann::json&& object) const {
  if (settings_.transform) {
    settings_.transform(object);
  }
  return std::make_shared<const nlohmann::json>(std::move(object));
}

Entry InformerStore::MakeEntry(const StoredObject& object) const {
  Entry entry;
  if (!settings_.compact_storage) {
    entry.object = object;
    return entry;
  }
  entry.resource_version = kube::ResourceVersionOf(*object);
  nlohmann::json::to_msgpack(*object, entry.packed);
  entry.packed.shrink_to_fit();
  return entry;
}

StoredObject InformerStore::Materialize(const Entry& entry) const {
  if (entry.object != nullptr || entry.packed.empty()) {
    return entry.object;
  }
  nlohmann::json object =
      nlohmann::json::from_msgpack(entry.packed, /*strict=*/true, /*allow_exceptions=*/false);
  if (object.is_discarded()) {
    // We wrote these bytes ourselves: failing to read them back is memory corruption.
    Log().Error("corrupt compact cache entry", {{"resource", settings_.resource}});
    std::abort();
  }
  return std::make_shared<const nlohmann::json>(std::move(object));
}

std::string InformerStore::VersionOf(const Entry& entry) {
  if (entry.object != nullptr) {
    return kube::ResourceVersionOf(*entry.object);
  }
  return entry.resource_version;
}

Entry InformerStore::MakeListedEntry(const std::string& key, nlohmann::json&& object,
                                     StoredObject* prepared) const {
  std::string version = kube::ResourceVersionOf(object);
  if (!version.empty()) {
    absl::ReaderMutexLock lock(&mu_);
    const auto it = objects_.find(key);
    if (it != objects_.end() && VersionOf(it->second) == version) {
      return MarkerAt(std::move(version));
    }
  }
  StoredObject ready = Prepare(std::move(object));
  Entry entry = MakeEntry(ready);
  if (prepared != nullptr) {
    *prepared = std::move(ready);
  }
  return entry;
}

Entry InformerStore::MarkerAt(std::string resource_version) {
  Entry marker;
  marker.resource_version = std::move(resource_version);
  marker.same_as_cached = true;
  return marker;
}

bool InformerStore::AddListed(const std::string& key, Entry& entry) {
  absl::MutexLock lock(&mu_);
  if (objects_.contains(key)) {
    return false;
  }
  objects_.emplace(key, std::move(entry));
  ++stats_->delivered_from_pages;
  UpdateSizeGauge();
  return true;
}

StoredObject InformerStore::Get(const std::string& key) const {
  Entry entry;
  {
    absl::ReaderMutexLock lock(&mu_);
    const auto it = objects_.find(key);
    if (it == objects_.end()) {
      return nullptr;
    }
    entry = it->second;
  }
  return Materialize(entry);  // outside the lock: decoding may take a while
}

std::vector<StoredObject> InformerStore::List(const std::string& prefix) const {
  std::vector<Entry> entries;
  {
    absl::ReaderMutexLock lock(&mu_);
    entries.reserve(prefix.empty() ? objects_.size() : 0);
    for (const auto& [key, entry] : objects_) {
      if (prefix.empty() || key.compare(0, prefix.size(), prefix) == 0) {
        entries.push_back(entry);
      }
    }
  }
  std::vector<StoredObject> out;
  out.reserve(entries.size());
  for (const auto& entry : entries) {
    if (StoredObject object = Materialize(entry)) {
      out.push_back(std::move(object));
    }
  }
  return out;
}

std::vector<std::string> InformerStore::Keys(const std::string& prefix) const {
  absl::ReaderMutexLock lock(&mu_);
  std::vector<std::string> keys;
  keys.reserve(prefix.empty() ? objects_.size() : 0);
  for (const auto& [key, entry] : objects_) {
    if (prefix.empty() || key.compare(0, prefix.size(), prefix) == 0) {
      keys.push_back(key);
    }
  }
  return keys;
}

std::string InformerStore::ResourceVersionOf(const std::string& key) const {
  absl::ReaderMutexLock lock(&mu_);
  const auto it = objects_.find(key);
  return it == objects_.end() ? "" : VersionOf(it->second);
}

size_t InformerStore::Size() const {
  absl::ReaderMutexLock lock(&mu_);
  return objects_.size();
}

std::string InformerStore::ResourceVersion() const {
  absl::ReaderMutexLock lock(&mu_);
  return resource_version_;
}

void InformerStore::SetResourceVersion(std::string resource_version) {
  absl::MutexLock lock(&mu_);
  resource_version_ = std::move(resource_version);
}

bool InformerStore::Synced() const {
  absl::ReaderMutexLock lock(&mu_);
  return synced_;
}

bool InformerStore::WaitForSynced(std::chrono::milliseconds timeout) const {
  absl::MutexLock lock(&mu_);
  mu_.AwaitWithTimeout(absl::Condition(&synced_), absl::FromChrono(timeout));
  return synced_;
}

void InformerStore::MarkSynced() {
  absl::MutexLock lock(&mu_);
  synced_ = true;
}

InformerStats InformerStore::Stats() const {
  absl::ReaderMutexLock lock(&mu_);
  return *stats_;
}

void InformerStore::Count(const std::function<void(InformerStats&)>& change) {
  absl::MutexLock lock(&mu_);
  change(*stats_);
}

namespace {

// A touched key's listed entry replaces what the watch left only when it is newer: possible
// only in a list that continued at a newer state (resource versions are etcd revisions there).
bool ListedIsNewer(const Entry& listed, const std::string& touched_version) {
  int64_t listed_version = 0;
  int64_t watched_version = 0;
  return !listed.same_as_cached &&
         absl::SimpleAtoi(InformerStore::VersionOf(listed), &listed_version) &&
         absl::SimpleAtoi(touched_version, &watched_version) && listed_version > watched_version;
}

}  // namespace

ReconcileResult InformerStore::Reconcile(ListedEntries listed, const std::string& resource_version,
                                         bool streamed, const TouchedKeys& touched) {
  // In place, so the cache never exists twice: added objects are remembered by key (read back
  // from the cache when notifying); replaced and removed entries are moved out of the cache.
  ReconcileResult result;
  absl::flat_hash_set<std::string_view> listed_keys;  // views of `listed`, alive until the end
  listed_keys.reserve(listed.size());
  {
    absl::MutexLock lock(&mu_);
    for (auto& [key, entry] : listed) {
      if (key.empty()) {
        continue;  // a streamed list's object deleted before the list ended
      }
      listed_keys.insert(key);
      if (const auto t = touched.find(key);
          t != touched.end() && !ListedIsNewer(entry, t->second)) {
        continue;  // the watch changed it while the list was read: the cache holds newer state
      }
      const auto cached = objects_.find(key);
      if (entry.same_as_cached) {
        CheckStillCached(cached, entry);
      } else if (cached == objects_.end()) {
        result.added.push_back(key);
        objects_.emplace(key, std::move(entry));
      } else if (VersionOf(cached->second) != VersionOf(entry)) {
        result.updated.emplace_back(std::exchange(cached->second, std::move(entry)), key);
      }  // else the same version: keep what readers already hold
    }
    for (auto it = objects_.begin(); it != objects_.end();) {
      if (listed_keys.contains(it->first) || touched.contains(it->first)) {
        ++it;
        continue;
      }
      result.deleted.push_back(std::move(it->second));  // not listed any more
      objects_.erase(it++);
    }
    resource_version_ = resource_version;
    stale_guard_version_ = 0;  // a list is one snapshot, unless GuardStaleEvents says otherwise
    result.first_sync = !synced_;
    result.lists = ++stats_->lists;
    if (streamed) {
      ++stats_->streamed_lists;
    }
    UpdateSizeGauge();
  }
  listed_keys.clear();
  listed.clear();
  listed.shrink_to_fit();
  return result;
}

void InformerStore::CheckStillCached(absl::flat_hash_map<std::string, Entry>::const_iterator cached,
                                     const Entry& marker) const {
  if (cached == objects_.end() || VersionOf(cached->second) != marker.resource_version) {
    // While a list is collected the cache changes only by the watch, which touches what it
    // changes (skipped above), and by a first list's delivered pages, whose markers name what
    // they cached: a marker always finds its entry.
    Log().Error("a listed object marked as cached is not cached at its version",
                {{"resource", settings_.resource}, {"resource_version", marker.resource_version}});
    std::abort();
  }
}

void InformerStore::GuardStaleEvents(int64_t newest_listed_version) {
  absl::MutexLock lock(&mu_);
  stale_guard_version_ = newest_listed_version;
}

bool InformerStore::IsOlderThanCached(const std::string& key, const std::string& version) {
  if (stale_guard_version_ == 0) {
    return false;
  }
  // Resource versions are opaque to clients in general; the API server's are etcd revisions,
  // compared only here, while the watch catches up with an inconsistent list's later pages.
  int64_t event_version = 0;
  if (!absl::SimpleAtoi(version, &event_version)) {
    stale_guard_version_ = 0;  // not numbers: stop comparing
    return false;
  }
  if (event_version >= stale_guard_version_) {
    stale_guard_version_ = 0;  // the watch is past every listed version
    return false;
  }
  const auto it = objects_.find(key);
  int64_t cached_version = 0;
  return it != objects_.end() && absl::SimpleAtoi(VersionOf(it->second), &cached_version) &&
         cached_version > event_version;
}

ChangeResult InformerStore::Apply(WatchEventType type, std::string key,
                                  std::string resource_version, Entry entry) {
  ChangeResult result;
  absl::MutexLock lock(&mu_);
  if (IsOlderThanCached(key, resource_version)) {
    ++stats_->stale_events;
    return result;  // a later page of an inconsistent list held a newer version
  }
  ++stats_->events;
  if (!resource_version.empty()) {
    resource_version_ = std::move(resource_version);
  }
  if (type == WatchEventType::kDeleted) {
    const auto it = objects_.find(key);
    if (it != objects_.end()) {
      result.old = std::move(it->second);
      objects_.erase(it);
    }
  } else {
    auto [it, inserted] = objects_.try_emplace(std::move(key), entry);
    if (!inserted) {
      const std::string cached_version = VersionOf(it->second);
      if (!cached_version.empty() && cached_version == VersionOf(entry)) {
        return result;  // this very version is cached (a list already held it): nothing changed
      }
      result.old = std::exchange(it->second, std::move(entry));
    }
  }
  UpdateSizeGauge();
  result.applied = true;
  return result;
}

void InformerStore::UpdateSizeGauge() {
  if (objects_gauge_ != nullptr) {
    objects_gauge_->Set(static_cast<double>(objects_.size()));
  }
}

}  // namespace mmi::kube::internal
