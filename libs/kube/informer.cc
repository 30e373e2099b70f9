#include "libs/kube/informer.h"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <random>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "libs/common/log.h"
#include "libs/kube/errors.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/registry.h"

namespace mmi::kube {
namespace {

const log::Logger& Log() {
  static const log::Logger logger("kube.informer");
  return logger;
}

// The BOOKMARK that ends a streamed list's initial events.
bool EndsInitialEvents(const nlohmann::json& bookmark) {
  const auto meta = bookmark.find("metadata");
  if (meta == bookmark.end() || !meta->is_object()) {
    return false;
  }
  const auto annotations = meta->find("annotations");
  if (annotations == meta->end() || !annotations->is_object()) {
    return false;
  }
  const auto end = annotations->find(std::string(kInitialEventsEndAnnotation));
  return end != annotations->end() && *end == "true";
}

const char* ReasonLabel(int reason) {
  static constexpr const char* kNames[] = {"closed",  "expired", "error",
                                           "stalled", "stopped", "list_failed"};
  return kNames[reason];
}

}  // namespace

Transform DropFields(const std::vector<std::string>& json_pointers) {
  std::vector<nlohmann::json::json_pointer> pointers;
  pointers.reserve(json_pointers.size());
  for (const auto& p : json_pointers) {
    pointers.emplace_back(p);  // a malformed pointer is a programming error (throws here, early)
  }
  return [pointers = std::move(pointers)](nlohmann::json& object) {
    for (const auto& pointer : pointers) {
      if (pointer.empty()) {
        continue;
      }
      nlohmann::json* parent = &object;
      const nlohmann::json::json_pointer parent_ptr = pointer.parent_pointer();
      if (!parent_ptr.empty()) {
        if (!object.contains(parent_ptr)) {
          continue;
        }
        parent = &object[parent_ptr];
      }
      if (parent->is_object()) {
        parent->erase(pointer.back());
      }
    }
  };
}

struct Informer::Metrics {
  prometheus::Family<prometheus::Counter>* restarts = nullptr;
  prometheus::Counter* relists = nullptr;
  prometheus::Counter* watch_list_fallbacks = nullptr;
  prometheus::Counter* inconsistent_continues = nullptr;
  prometheus::Gauge* objects = nullptr;
  std::string resource;

  Metrics(prometheus::Registry* registry, std::string resource_label)
      : resource(std::move(resource_label)) {
    if (registry == nullptr) {
      return;
    }
    try {
      restarts = &prometheus::BuildCounter()
                      .Name("mmi_kube_watch_restarts_total")
                      .Help(
                          "Watches of the Kubernetes API re-established, by resource and reason "
                          "(closed: server timeout; expired: 410, relisted; error; stalled).")
                      .Register(*registry);
      relists = &prometheus::BuildCounter()
                     .Name("mmi_kube_relists_total")
                     .Help("Full lists of a watched resource after the first one.")
                     .Register(*registry)
                     .Add({{"resource", resource}});
      watch_list_fallbacks =
          &prometheus::BuildCounter()
               .Name("mmi_kube_watch_list_fallbacks_total")
               .Help(
                   "Streamed lists (sendInitialEvents) that failed or were refused and were "
                   "replaced by a paged LIST.")
               .Register(*registry)
               .Add({{"resource", resource}});
      inconsistent_continues =
          &prometheus::BuildCounter()
               .Name("mmi_kube_list_inconsistent_continues_total")
               .Help(
                   "Paged lists whose continue token expired (410) and that went on from the next "
                   "key at the API server's current state; the watch repairs the seam.")
               .Register(*registry)
               .Add({{"resource", resource}});
      objects = &prometheus::BuildGauge()
                     .Name("mmi_kube_cache_objects")
                     .Help("Objects held in an informer cache.")
                     .Register(*registry)
                     .Add({{"resource", resource}});
    } catch (const std::exception& e) {
      Log().Error("cannot register informer metrics", {{"error", e.what()}});
      restarts = nullptr;
      relists = nullptr;
      watch_list_fallbacks = nullptr;
      inconsistent_continues = nullptr;
      objects = nullptr;
    }
  }
};

Informer::Informer(KubeClient& client, const Clock& clock, InformerSettings settings,
                   prometheus::Registry* registry)
    : client_(client),
      clock_(clock),
      settings_(std::move(settings)),
      metrics_(std::make_unique<Metrics>(registry, settings_.resource.GroupResource())),
      sleeper_(RealSleeper::Instance()) {}

Informer::~Informer() { Stop(); }

void Informer::AddHandler(InformerHandler& handler) {
  absl::MutexLock lock(&lifecycle_mu_);
  if (started_) {
    Log().Error("AddHandler after Start is ignored (a bug in the caller)",
                {{"resource", metrics_->resource}});
    return;
  }
  handlers_.push_back(&handler);
}

void Informer::Start() {
  absl::MutexLock lock(&lifecycle_mu_);
  if (started_) {
    return;
  }
  started_ = true;
  thread_ = std::jthread([this](const std::stop_token& stop) { Run(stop); });
}

void Informer::Stop() {
  absl::MutexLock lock(&lifecycle_mu_);
  if (!thread_.joinable()) {
    return;
  }
  thread_.request_stop();  // also ends a backoff wait
  thread_.join();
}

bool Informer::HasSynced() const {
  absl::ReaderMutexLock lock(&mu_);
  return synced_;
}

bool Informer::WaitForSynced(std::chrono::milliseconds timeout) const {
  absl::MutexLock lock(&mu_);
  mu_.AwaitWithTimeout(absl::Condition(&synced_), absl::FromChrono(timeout));
  return synced_;
}

ObjectPtr Informer::Get(std::string_view ns, std::string_view name) const {
  const std::string key = ObjectKey(ns, name);
  Entry entry;
  {
    absl::ReaderMutexLock lock(&mu_);
    const auto it = objects_.find(key);
    if (it == objects_.end()) {
      return nullptr;
    }
    entry = it->second;
  }
  return Materialize(entry);
}

std::string Informer::ResourceVersionOf(std::string_view ns, std::string_view name) const {
  const std::string key = ObjectKey(ns, name);
  absl::ReaderMutexLock lock(&mu_);
  const auto it = objects_.find(key);
  return it == objects_.end() ? "" : VersionOf(it->second);
}

std::vector<ObjectPtr> Informer::List(std::string_view ns) const {
  std::vector<Entry> entries;
  const std::string prefix = ns.empty() ? "" : absl::StrCat(std::string(ns), "/");
  {
    absl::ReaderMutexLock lock(&mu_);
    entries.reserve(ns.empty() ? objects_.size() : 0);
    for (const auto& [key, entry] : objects_) {
      if (prefix.empty() || key.compare(0, prefix.size(), prefix) == 0) {
        entries.push_back(entry);
      }
    }
  }
  std::vector<ObjectPtr> out;
  out.reserve(entries.size());
  for (const auto& entry : entries) {
    if (ObjectPtr object = Materialize(entry)) {
      out.push_back(std::move(object));
    }
  }
  return out;
}

size_t Informer::Size() const {
  absl::ReaderMutexLock lock(&mu_);
  return objects_.size();
}

std::string Informer::ResourceVersion() const {
  absl::ReaderMutexLock lock(&mu_);
  return resource_version_;
}

InformerStats Informer::Stats() const {
  absl::ReaderMutexLock lock(&mu_);
  return stats_;
}

ObjectPtr Informer::Prepare(nlohmann::json&& object) const {
  if (settings_.transform) {
    settings_.transform(object);
  }
  return std::make_shared<const nlohmann::json>(std::move(object));
}

Informer::Entry Informer::MakeEntry(const ObjectPtr& object) const {
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

ObjectPtr Informer::Materialize(const Entry& entry) const {
  if (entry.object != nullptr || entry.packed.empty()) {
    return entry.object;
  }
  nlohmann::json object =
      nlohmann::json::from_msgpack(entry.packed, /*strict=*/true, /*allow_exceptions=*/false);
  if (object.is_discarded()) {
    // We wrote these bytes ourselves: failing to read them back is memory corruption.
    Log().Error("corrupt compact cache entry", {{"resource", metrics_->resource}});
    std::abort();
  }
  return std::make_shared<const nlohmann::json>(std::move(object));
}

std::string Informer::VersionOf(const Entry& entry) {
  if (entry.object != nullptr) {
    return kube::ResourceVersionOf(*entry.object);
  }
  return entry.resource_version;
}

void Informer::CountRestart(WatchEnd reason) {
  if (metrics_->restarts != nullptr && reason != WatchEnd::kStopped) {
    metrics_->restarts
        ->Add({{"resource", metrics_->resource}, {"reason", ReasonLabel(static_cast<int>(reason))}})
        .Increment();
  }
}

void Informer::Run(const std::stop_token& stop) {
  Backoff backoff(settings_.backoff);
  bool need_list = true;
  bool can_stream = settings_.watch_list;  // false for good once the server says it cannot
  bool list_next = false;                  // the last streamed list failed: one paged LIST
  auto retry_list = [&](const absl::Status& failed) {
    const auto delay = backoff.Next();
    Log().Warn("list failed; retrying", {{"resource", metrics_->resource},
                                         {"error", std::string(failed.message())},
                                         {"retry_in_ms", static_cast<int64_t>(delay.count())}});
    sleeper_.SleepFor(delay, stop);
  };
  while (!stop.stop_requested()) {
    if (const absl::Status failed = TakeListFailure(); !failed.ok()) {
      need_list = true;  // the paged list behind the watch failed: start over
      retry_list(failed);
      continue;
    }
    const bool streaming = need_list && can_stream && !list_next;
    if (need_list && !streaming) {
      const absl::Status started = StartPagedList(stop);
      if (stop.stop_requested()) {
        break;
      }
      if (!started.ok()) {
        retry_list(started);
        continue;
      }
      need_list = false;
      list_next = false;
    }
    const auto started = clock_.MonotonicNow();
    const WatchOutcome outcome = WatchOnce(stop, streaming);
    if (outcome.end == WatchEnd::kStopped || stop.stop_requested()) {
      break;
    }
    if (outcome.end == WatchEnd::kListFailed) {
      continue;  // handled at the top of the loop
    }
    if (streaming && !outcome.listed) {
      // Ended before its initial events were complete: nothing of it was applied.
      {
        absl::MutexLock lock(&mu_);
        ++stats_.watch_list_fallbacks;
      }
      if (metrics_->watch_list_fallbacks != nullptr) {
        metrics_->watch_list_fallbacks->Increment();
      }
      if (outcome.unsupported) {
        can_stream = false;
        Log().Info(
            "the API server cannot stream lists (sendInitialEvents); using paged LISTs",
            {{"resource", metrics_->resource}, {"error", std::string(outcome.error.message())}});
      } else {
        list_next = true;
        Log().Warn("streamed list ended before its initial events were complete; listing",
                   {{"resource", metrics_->resource},
                    {"error", outcome.error.ok() ? std::string("the stream ended")
                                                 : std::string(outcome.error.message())}});
      }
      continue;
    }
    if (streaming) {
      need_list = false;
    }
    CountRestart(outcome.end);
    if (clock_.MonotonicNow() - started >= settings_.backoff_reset_after) {
      backoff.Reset();
    }
    switch (outcome.end) {
      case WatchEnd::kClosed:
        Log().Debug("watch ended by the server; resuming",
                    {{"resource", metrics_->resource}, {"resource_version", WatchFrom()}});
        break;
      case WatchEnd::kExpired:
        Log().Info("resource version expired (410); relisting",
                   {{"resource", metrics_->resource}, {"resource_version", WatchFrom()}});
        AbandonList();  // a list still in progress cannot be completed by this watch any more
        need_list = true;
        break;
      case WatchEnd::kError:
      case WatchEnd::kStalled: {
        const auto delay = backoff.Next();
        Log().Warn(outcome.end == WatchEnd::kStalled ? "watch stalled; reconnecting"
                                                     : "watch failed; retrying",
                   {{"resource", metrics_->resource},
                    {"error", std::string(outcome.error.message())},
                    {"retry_in_ms", static_cast<int64_t>(delay.count())}});
        sleeper_.SleepFor(delay, stop);
        break;
      }
      case WatchEnd::kStopped:
      case WatchEnd::kListFailed:
        break;
    }
  }
  AbandonList();
}

absl::Status Informer::StartPagedList(const std::stop_token& stop) {
  AbandonList();  // joins the previous list's worker, which has finished
  const auto started = clock_.MonotonicNow();
  list_worker_ = std::jthread([this, started](const std::stop_token& worker_stop) {
    // In list order, so the first sync reports objects in the order the server returned them.
    // Entries are built as pages arrive, so compact storage never holds the whole list as trees.
    std::vector<std::pair<std::string, Entry>> listed;
    ListOptions options;
    options.label_selector = settings_.label_selector;
    options.field_selector = settings_.field_selector;
    options.limit = settings_.page_size;
    bool inconsistent = false;
    int64_t newest_listed = 0;  // the newest numeric version listed after an inconsistent turn
    ListItemCallbacks callbacks;
    callbacks.on_item = [&](nlohmann::json&& item) {
      std::string key = ObjectKey(item);
      Entry entry = MakeEntry(Prepare(std::move(item)));
      if (int64_t version = 0; inconsistent && absl::SimpleAtoi(VersionOf(entry), &version)) {
        newest_listed = std::max(newest_listed, version);
      }
      listed.emplace_back(std::move(key), std::move(entry));
    };
    callbacks.on_restart = [&] { listed.clear(); };
    callbacks.on_first_page = [&](const std::string& first_page_version) {
      absl::MutexLock lock(&pending_mu_);
      pending_.list_version = first_page_version;
      pending_.first_page = true;
      pending_.active = true;  // the watch starts now and buffers until the replace is done
    };
    // The watch runs since the first page, so an expired continue token need not cost one
    // unpaged LIST of everything (which a hub with 300,000 Applications cannot serve well).
    callbacks.on_inconsistent_continue = [&] {
      inconsistent = true;
      {
        absl::MutexLock lock(&mu_);
        ++stats_.inconsistent_continues;
      }
      if (metrics_->inconsistent_continues != nullptr) {
        metrics_->inconsistent_continues->Increment();
      }
      Log().Info(
          "continue token expired (410); listing on from the next key at the current "
          "state, the watch repairs the difference",
          {{"resource", metrics_->resource}, {"listed", static_cast<int64_t>(listed.size())}});
    };
    absl::StatusOr<std::string> rv =
        ForEachListItem(client_, settings_.resource, options, callbacks, worker_stop);
    if (worker_stop.stop_requested()) {
      return;  // abandoned
    }
    if (!rv.ok()) {
      absl::MutexLock lock(&pending_mu_);
      pending_.list_error = rv.status();
      if (pending_.watch_cancel != nullptr) {
        pending_.watch_cancel->request_stop();
      }
      return;
    }
    Replace(std::move(listed), *rv, started, /*streamed=*/false);
    if (newest_listed > 0) {
      absl::MutexLock lock(&mu_);
      stale_guard_version_ = newest_listed;  // until the watch is past what the pages held
    }
    DrainPending(worker_stop);
  });
  // Wait for the first page (the watch can start) or the list's failure.
  absl::Status failed;
  {
    absl::MutexLock lock(&pending_mu_);
    const auto first_page_or_failure =
        +[](Pending* p) { return p->first_page || !p->list_error.ok(); };
    while (!pending_mu_.AwaitWithTimeout(absl::Condition(first_page_or_failure, &pending_),
                                         absl::Milliseconds(100))) {
      if (stop.stop_requested()) {
        return absl::CancelledError("stopped");  // Run abandons the list on its way out
      }
    }
    if (pending_.first_page) {
      return absl::OkStatus();  // a later failure ends the watch (kListFailed)
    }
    failed = pending_.list_error;
  }
  AbandonList();  // joins: the worker returned after recording its failure
  return failed;
}

void Informer::StartReplace(std::vector<std::pair<std::string, Entry>> listed,
                            std::string resource_version,
                            std::chrono::steady_clock::time_point started) {
  AbandonList();  // joins the previous list's worker, which has finished
  {
    absl::MutexLock lock(&pending_mu_);
    pending_.list_version = resource_version;
    pending_.active = true;
  }
  list_worker_ = std::jthread([this, listed = std::move(listed), rv = std::move(resource_version),
                               started](const std::stop_token& worker_stop) mutable {
    Replace(std::move(listed), rv, started, /*streamed=*/true);
    DrainPending(worker_stop);
  });
}

void Informer::DrainPending(const std::stop_token& stop) {
  while (!stop.stop_requested()) {
    std::vector<Buffered> batch;
    {
      absl::MutexLock lock(&pending_mu_);
      if (pending_.items.empty()) {
        pending_.active = false;  // from now on the watch applies its events itself
        pending_.index.clear();
        if (!pending_.resume_version.empty()) {
          absl::MutexLock cache_lock(&mu_);
          resource_version_ = pending_.resume_version;  // may be a bookmark's, after the events
        }
        return;
      }
      batch.swap(pending_.items);
      pending_.index.clear();
    }
    for (auto& item : batch) {
      std::string rv = VersionOf(item.entry);
      ObjectPtr object = Materialize(item.entry);
      ApplyChange(item.type, std::move(item.key), std::move(rv), std::move(object),
                  std::move(item.entry));
    }
  }
}

absl::Status Informer::TakeListFailure() {
  absl::Status failed;
  {
    absl::MutexLock lock(&pending_mu_);
    if (pending_.list_error.ok()) {
      return absl::OkStatus();
    }
    failed = pending_.list_error;
  }
  AbandonList();  // joins: the worker returned after recording its failure
  return failed;
}

void Informer::AbandonList() {
  if (list_worker_.joinable()) {
    list_worker_.request_stop();
    list_worker_.join();
  }
  absl::MutexLock lock(&pending_mu_);
  pending_ = Pending{};
}

bool Informer::Listing() const {
  absl::ReaderMutexLock lock(&pending_mu_);
  return pending_.active;
}

std::string Informer::WatchFrom() const {
  {
    absl::ReaderMutexLock lock(&pending_mu_);
    if (pending_.active) {
      return pending_.resume_version.empty() ? pending_.list_version : pending_.resume_version;
    }
  }
  return ResourceVersion();
}

void Informer::NoteVersion(std::string resource_version) {
  absl::MutexLock lock(&pending_mu_);
  if (pending_.active) {
    pending_.resume_version = std::move(resource_version);
    return;
  }
  absl::MutexLock cache_lock(&mu_);
  resource_version_ = std::move(resource_version);
}

bool Informer::BufferWhileListing(WatchEventType type, std::string key, std::string rv,
                                  const ObjectPtr& object) {
  absl::MutexLock lock(&pending_mu_);
  if (!pending_.active) {
    return false;
  }
  Entry entry = MakeEntry(object);  // for DELETED: the final state, for OnDelete
  if (!rv.empty()) {
    pending_.resume_version = std::move(rv);
  }
  const auto it = pending_.index.find(key);
  // The newest event per object, except that a re-create after a delete stays two events (the
  // handlers see OnDelete then OnAdd, as without the buffer).
  if (it != pending_.index.end() && !(pending_.items[it->second].type == WatchEventType::kDeleted &&
                                      type != WatchEventType::kDeleted)) {
    Buffered& newest = pending_.items[it->second];
    newest.type = type;  // ADDED and MODIFIED both apply as "store this state"
    newest.entry = std::move(entry);
  } else {
    pending_.index.insert_or_assign(key, pending_.items.size());
    pending_.items.push_back(Buffered{type, std::move(key), std::move(entry)});
  }
  absl::MutexLock cache_lock(&mu_);
  ++stats_.buffered_events;
  return true;
}

void Informer::Replace(std::vector<std::pair<std::string, Entry>> listed,
                       const std::string& resource_version,
                       std::chrono::steady_clock::time_point started, bool streamed) {
  // Reconcile with the cache: keep unchanged entries, remember the differences. Added objects
  // are remembered by key (read back from the cache when notifying); replaced and removed
  // entries are moved out of the old cache.
  absl::flat_hash_map<std::string, Entry> fresh;
  std::vector<std::string> added;
  std::vector<std::pair<Entry, std::string>> updated;  // old entry, key
  std::vector<Entry> deleted;
  bool first_sync = false;
  int64_t lists = 0;
  {
    absl::MutexLock lock(&mu_);
    fresh.reserve(listed.size());
    for (auto& [key, entry] : listed) {
      if (key.empty()) {
        continue;  // a streamed list's object deleted before the list ended
      }
      const auto old = objects_.find(key);
      if (old == objects_.end()) {
        added.push_back(key);
      } else if (VersionOf(old->second) == VersionOf(entry)) {
        entry = std::move(old->second);  // same version: keep what readers already hold
        objects_.erase(old);
      } else {
        updated.emplace_back(std::move(old->second), key);
        objects_.erase(old);
      }
      fresh.insert_or_assign(std::move(key), std::move(entry));
    }
    for (auto& [key, entry] : objects_) {
      deleted.push_back(std::move(entry));  // what is left was not listed
    }
    objects_.swap(fresh);
    resource_version_ = resource_version;
    stale_guard_version_ = 0;  // a list is one snapshot, unless the list worker says otherwise
    first_sync = !synced_;
    lists = ++stats_.lists;
    if (streamed) {
      ++stats_.streamed_lists;
    }
    if (metrics_->objects != nullptr) {
      metrics_->objects->Set(static_cast<double>(objects_.size()));
    }
  }
  fresh.clear();  // the old cache: free it before calling handlers
  listed.clear();
  listed.shrink_to_fit();
  if (lists > 1 && metrics_->relists != nullptr) {
    metrics_->relists->Increment();
  }
  auto current = [&](const std::string& key) -> ObjectPtr {
    Entry entry;
    {
      absl::ReaderMutexLock lock(&mu_);
      const auto it = objects_.find(key);
      if (it == objects_.end()) {
        return nullptr;
      }
      entry = it->second;
    }
    return Materialize(entry);
  };
  if (!handlers_.empty()) {
    for (const auto& key : added) {
      const ObjectPtr object = current(key);
      for (auto* handler : handlers_) {
        handler->OnAdd(object, first_sync);
      }
    }
    for (const auto& [old_entry, key] : updated) {
      const ObjectPtr old_object = Materialize(old_entry);
      const ObjectPtr new_object = current(key);
      for (auto* handler : handlers_) {
        handler->OnUpdate(old_object, new_object);
      }
    }
    for (const auto& entry : deleted) {
      const ObjectPtr object = Materialize(entry);
      for (auto* handler : handlers_) {
        handler->OnDelete(object);
      }
    }
  }
  if (first_sync) {
    {
      absl::MutexLock lock(&mu_);
      synced_ = true;
    }
    for (auto* handler : handlers_) {
      handler->OnSynced();
    }
  }
  Log().Info(first_sync ? "informer synced" : "relisted",
             {{"resource", metrics_->resource},
              {"how", streamed ? "streamed list" : "paged list"},
              {"objects", static_cast<uint64_t>(Size())},
              {"added", static_cast<uint64_t>(added.size())},
              {"updated", static_cast<uint64_t>(updated.size())},
              {"deleted", static_cast<uint64_t>(deleted.size())},
              {"resource_version", resource_version},
              {"ms", static_cast<int64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                              clock_.MonotonicNow() - started)
                                              .count())}});
}

Informer::WatchOutcome Informer::WatchOnce(const std::stop_token& stop, bool stream_list) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  const int64_t lo = settings_.min_watch_timeout.count();
  const int64_t hi = std::max(lo, static_cast<int64_t>(settings_.max_watch_timeout.count()));
  WatchOptions options;
  options.label_selector = settings_.label_selector;
  options.field_selector = settings_.field_selector;
  options.allow_bookmarks = true;
  options.stall_timeout = settings_.stall_timeout;
  if (stream_list) {
    options.send_initial_events = true;  // from a consistent read: resource_version stays ""
    options.timeout = settings_.watch_list_timeout;
  } else {
    options.resource_version = WatchFrom();
    options.timeout = std::chrono::seconds(std::uniform_int_distribution<int64_t>(lo, hi)(rng));
  }
  {
    absl::MutexLock lock(&mu_);
    ++stats_.watches;
  }
  const auto started = clock_.MonotonicNow();
  WatchOutcome outcome;
  InitialEvents initial;
  bool expired = false;
  absl::Status event_error;
  // Ended by Stop() or, while a paged list is completed on the list worker, by its failure.
  std::stop_source cancel;
  const std::stop_callback forward_stop(stop, [&cancel] { cancel.request_stop(); });
  {
    absl::MutexLock lock(&pending_mu_);
    pending_.watch_cancel = &cancel;
    if (!pending_.list_error.ok()) {
      cancel.request_stop();
    }
  }
  const absl::Status status = client_.Watch(
      settings_.resource, options,
      [&](WatchEvent&& event) {
        if (stream_list && !outcome.listed) {
          return CollectInitial(std::move(event), initial, started, outcome);
        }
        return Apply(std::move(event), expired, event_error);
      },
      cancel.get_token());
  {
    absl::MutexLock lock(&pending_mu_);
    pending_.watch_cancel = nullptr;
  }
  if (stop.stop_requested()) {
    outcome.end = WatchEnd::kStopped;
    return outcome;
  }
  if (cancel.stop_requested()) {
    outcome.end = WatchEnd::kListFailed;
    return outcome;
  }
  if (absl::IsCancelled(status)) {
    outcome.end = WatchEnd::kStopped;
    return outcome;
  }
  if (stream_list && !outcome.listed) {
    if (outcome.error.ok()) {
      outcome.error = status;
    }
    // 400/422: the server does not know sendInitialEvents or has the feature off; a 500 that
    // names it or RequestWatchProgress: its storage cannot serve it.
    const std::string message(outcome.error.message());
    outcome.unsupported = absl::IsInvalidArgument(outcome.error) ||
                          absl::StrContains(message, "RequestWatchProgress") ||
                          absl::StrContains(message, "sendInitialEvents");
    outcome.end = WatchEnd::kError;
    return outcome;
  }
  if (expired || IsGone(status)) {
    absl::MutexLock lock(&mu_);
    ++stats_.expired;
    outcome.end = WatchEnd::kExpired;
    return outcome;
  }
  if (!event_error.ok() || !status.ok()) {
    outcome.error = !event_error.ok() ? event_error : status;
    absl::MutexLock lock(&mu_);
    ++stats_.watch_errors;
    outcome.end = absl::IsDeadlineExceeded(status) ? WatchEnd::kStalled : WatchEnd::kError;
    return outcome;
  }
  outcome.end = WatchEnd::kClosed;
  return outcome;
}

bool Informer::CollectInitial(WatchEvent&& event, InitialEvents& initial,
                              std::chrono::steady_clock::time_point started,
                              WatchOutcome& outcome) {
  switch (event.type) {
    case WatchEventType::kAdded:
    case WatchEventType::kModified: {
      std::string key = ObjectKey(event.object);
      Entry entry = MakeEntry(Prepare(std::move(event.object)));
      const auto [it, inserted] = initial.index.try_emplace(key, initial.items.size());
      if (inserted) {
        initial.items.emplace_back(std::move(key), std::move(entry));
      } else {
        initial.items[it->second].second = std::move(entry);
      }
      return true;
    }
    case WatchEventType::kDeleted: {
      const auto it = initial.index.find(ObjectKey(event.object));
      if (it != initial.index.end()) {
        initial.items[it->second].first.clear();
        initial.index.erase(it);
      }
      return true;
    }
    case WatchEventType::kBookmark: {
      if (!EndsInitialEvents(event.object)) {
        return true;  // only the annotated bookmark ends the initial events
      }
      initial.index = {};
      // Replaced on the list worker: this stream goes on being read (and buffered) meanwhile.
      StartReplace(std::move(initial.items), kube::ResourceVersionOf(event.object), started);
      initial.items = {};
      outcome.listed = true;
      return true;
    }
    case WatchEventType::kError:
      outcome.error = StatusFromApiStatus(
          absl::StrCat("WATCH ", settings_.resource.CollectionPath(), " (streamed list)"),
          event.object);
      return false;
  }
  return true;
}

bool Informer::Apply(WatchEvent&& event, bool& expired, absl::Status& error) {
  if (event.type == WatchEventType::kError) {
    NoteWatchError(event.object, expired, error);
    return false;
  }
  std::string rv = kube::ResourceVersionOf(event.object);
  if (event.type == WatchEventType::kBookmark) {
    if (!rv.empty()) {
      NoteVersion(std::move(rv));
    }
    return true;
  }
  std::string key = ObjectKey(event.object);
  ObjectPtr object = Prepare(std::move(event.object));
  if (BufferWhileListing(event.type, key, rv, object)) {
    return true;  // applied after the list, by the list worker
  }
  Entry entry = event.type == WatchEventType::kDeleted ? Entry{} : MakeEntry(object);
  ApplyChange(event.type, std::move(key), std::move(rv), std::move(object), std::move(entry));
  return true;
}

void Informer::NoteWatchError(const nlohmann::json& status_object, bool& expired,
                              absl::Status& error) const {
  const absl::Status status = StatusFromApiStatus(
      absl::StrCat("WATCH ", settings_.resource.CollectionPath()), status_object);
  if (IsGone(status)) {
    expired = true;
  } else {
    error = status;
  }
}

bool Informer::IsOlderThanCached(const std::string& key, const std::string& version) {
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

void Informer::ApplyChange(WatchEventType type, std::string key, std::string resource_version,
                           ObjectPtr object, Entry entry) {
  std::optional<Entry> old;
  {
    absl::MutexLock lock(&mu_);
    if (IsOlderThanCached(key, resource_version)) {
      ++stats_.stale_events;
      return;  // a later page of an inconsistent list held a newer version
    }
    ++stats_.events;
    if (!resource_version.empty()) {
      resource_version_ = std::move(resource_version);
    }
    if (type == WatchEventType::kDeleted) {
      const auto it = objects_.find(key);
      if (it != objects_.end()) {
        old = std::move(it->second);
        objects_.erase(it);
      }
    } else {
      auto [it, inserted] = objects_.try_emplace(std::move(key), entry);
      if (!inserted) {
        const std::string cached_version = VersionOf(it->second);
        if (!cached_version.empty() && cached_version == VersionOf(entry)) {
          return;  // this very version is cached (a list already held it): nothing changed
        }
        old = std::exchange(it->second, std::move(entry));
      }
    }
    if (metrics_->objects != nullptr) {
      metrics_->objects->Set(static_cast<double>(objects_.size()));
    }
  }
  if (handlers_.empty()) {
    return;
  }
  if (type == WatchEventType::kDeleted) {
    if (old.has_value()) {
      for (auto* handler : handlers_) {
        handler->OnDelete(object);
      }
    }
  } else if (old.has_value()) {
    const ObjectPtr old_object = Materialize(*old);
    for (auto* handler : handlers_) {
      handler->OnUpdate(old_object, object);
    }
  } else {
    for (auto* handler : handlers_) {
      handler->OnAdd(object, false);
    }
  }
}

}  // namespace mmi::kube
