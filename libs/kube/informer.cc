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
#include "libs/kube/internal/loggers.h"
#include "libs/kube/internal/paged_list.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/registry.h"

namespace mmi::kube {
namespace {

const log::Logger& Log() { return internal::InformerLog(); }

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
  prometheus::Counter* streamed_lists = nullptr;
  prometheus::Counter* paged_lists = nullptr;
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
      auto& lists = prometheus::BuildCounter()
                        .Name("mmi_kube_lists_total")
                        .Help(
                            "Complete lists of a watched resource (the first one and relists), by "
                            "how they were read: streamed (sendInitialEvents) or paged (LIST).")
                        .Register(*registry);
      streamed_lists = &lists.Add({{"resource", resource}, {"how", "streamed"}});
      paged_lists = &lists.Add({{"resource", resource}, {"how", "paged"}});
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
      streamed_lists = nullptr;
      paged_lists = nullptr;
      watch_list_fallbacks = nullptr;
      inconsistent_continues = nullptr;
      objects = nullptr;
    }
  }
};

namespace {

internal::InformerStore::Settings StoreSettings(const InformerSettings& settings) {
  return {.transform = settings.transform,
          .compact_storage = settings.compact_storage,
          .resource = settings.resource.GroupResource()};
}

template <typename Event>
void Notify(const std::vector<InformerHandler*>& handlers, const Event& event) {
  for (auto* handler : handlers) {
    event(*handler);
  }
}

int64_t MillisecondsSince(const Clock& clock, std::chrono::steady_clock::time_point started) {
  return static_cast<int64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(clock.MonotonicNow() - started)
          .count());
}

}  // namespace

Informer::Informer(KubeClient& client, const Clock& clock, InformerSettings settings,
                   prometheus::Registry* registry)
    : client_(client),
      clock_(clock),
      settings_(std::move(settings)),
      metrics_(std::make_unique<Metrics>(registry, settings_.resource.GroupResource())),
      sleeper_(RealSleeper::Instance()),
      store_(StoreSettings(settings_), metrics_->objects) {}

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

bool Informer::HasSynced() const { return store_.Synced(); }

bool Informer::WaitForSynced(std::chrono::milliseconds timeout) const {
  return store_.WaitForSynced(timeout);
}

ObjectPtr Informer::Get(std::string_view ns, std::string_view name) const {
  return store_.Get(ObjectKey(ns, name));
}

std::string Informer::ResourceVersionOf(std::string_view ns, std::string_view name) const {
  return store_.ResourceVersionOf(ObjectKey(ns, name));
}

std::vector<ObjectPtr> Informer::List(std::string_view ns) const {
  return store_.List(ns.empty() ? "" : absl::StrCat(std::string(ns), "/"));
}

std::vector<std::string> Informer::Keys(std::string_view ns) const {
  return store_.Keys(ns.empty() ? "" : absl::StrCat(std::string(ns), "/"));
}

size_t Informer::Size() const { return store_.Size(); }

std::string Informer::ResourceVersion() const { return store_.ResourceVersion(); }

InformerStats Informer::Stats() const { return store_.Stats(); }

bool Informer::Listing() const { return buffer_.Active(); }

void Informer::CountRestart(internal::WatchEnd reason) {
  if (metrics_->restarts != nullptr && reason != internal::WatchEnd::kStopped) {
    metrics_->restarts
        ->Add({{"resource", metrics_->resource}, {"reason", internal::WatchEndLabel(reason)}})
        .Increment();
  }
}

void Informer::Run(const std::stop_token& stop) {
  Backoff backoff(settings_.backoff);
  internal::ListPlan plan(settings_.watch_list, settings_.stream_first_list_only);
  auto retry_list = [&](const absl::Status& failed) {
    const auto delay = backoff.Next();
    Log().Warn("list failed; retrying", {{"resource", metrics_->resource},
                                         {"error", std::string(failed.message())},
                                         {"retry_in_ms", static_cast<int64_t>(delay.count())}});
    sleeper_.SleepFor(delay, stop);
  };
  while (!stop.stop_requested()) {
    if (const absl::Status failed = TakeListFailure(); !failed.ok()) {
      plan.ListAgain();  // the paged list behind the watch failed: start over
      retry_list(failed);
      continue;
    }
    const bool streaming = plan.Streams();
    if (plan.NeedsPagedList()) {
      const absl::Status started = StartPagedList(stop);
      if (stop.stop_requested()) {
        break;
      }
      if (!started.ok()) {
        retry_list(started);
        continue;
      }
      plan.Listed();
    }
    const auto started = clock_.MonotonicNow();
    const WatchOutcome outcome = WatchOnce(stop, streaming);
    if (streaming && outcome.listed) {
      plan.Listed();  // before any exit below: a relist must know the first list is done
    }
    if (outcome.end == internal::WatchEnd::kStopped || stop.stop_requested()) {
      break;
    }
    if (outcome.end == internal::WatchEnd::kListFailed) {
      continue;  // handled at the top of the loop
    }
    if (streaming && !outcome.listed) {
      AfterStreamedListFailed(outcome, plan);
      continue;
    }
    if (clock_.MonotonicNow() - started >= settings_.backoff_reset_after) {
      backoff.Reset();
    }
    AfterWatch(outcome, plan, backoff, stop);
  }
  AbandonList();
}

void Informer::AfterStreamedListFailed(const WatchOutcome& outcome, internal::ListPlan& plan) {
  // Ended before its initial events were complete: nothing of it was applied.
  store_.Count([](InformerStats& stats) { ++stats.watch_list_fallbacks; });
  if (metrics_->watch_list_fallbacks != nullptr) {
    metrics_->watch_list_fallbacks->Increment();
  }
  plan.StreamedListFailed(outcome.unsupported);
  if (outcome.unsupported) {
    Log().Info("the API server cannot stream lists (sendInitialEvents); using paged LISTs",
               {{"resource", metrics_->resource}, {"error", std::string(outcome.error.message())}});
  } else {
    Log().Warn("streamed list ended before its initial events were complete; listing",
               {{"resource", metrics_->resource},
                {"error", outcome.error.ok() ? std::string("the stream ended")
                                             : std::string(outcome.error.message())}});
  }
}

void Informer::AfterWatch(const WatchOutcome& outcome, internal::ListPlan& plan, Backoff& backoff,
                          const std::stop_token& stop) {
  CountRestart(outcome.end);
  switch (outcome.end) {
    case internal::WatchEnd::kClosed:
      Log().Debug("watch ended by the server; resuming",
                  {{"resource", metrics_->resource}, {"resource_version", buffer_.WatchFrom()}});
      break;
    case internal::WatchEnd::kExpired:
      Log().Info("resource version expired (410); relisting",
                 {{"resource", metrics_->resource}, {"resource_version", buffer_.WatchFrom()}});
      AbandonList();  // a list still in progress cannot be completed by this watch any more
      plan.ListAgain();
      break;
    case internal::WatchEnd::kError:
    case internal::WatchEnd::kStalled: {
      const auto delay = backoff.Next();
      Log().Warn(outcome.end == internal::WatchEnd::kStalled ? "watch stalled; reconnecting"
                                                             : "watch failed; retrying",
                 {{"resource", metrics_->resource},
                  {"error", std::string(outcome.error.message())},
                  {"retry_in_ms", static_cast<int64_t>(delay.count())}});
      sleeper_.SleepFor(delay, stop);
      break;
    }
    case internal::WatchEnd::kStopped:
    case internal::WatchEnd::kListFailed:
      break;
  }
}

absl::Status Informer::StartPagedList(const std::stop_token& stop) {
  AbandonList();  // joins the previous list's worker, which has finished
  const auto started = clock_.MonotonicNow();
  list_worker_ = std::jthread([this, started](const std::stop_token& worker_stop) {
    ListOptions options;
    options.label_selector = settings_.label_selector;
    options.field_selector = settings_.field_selector;
    options.limit = settings_.page_size;
    internal::PagedListHooks hooks;
    hooks.on_first_page = [this](const std::string& version) { buffer_.FirstPageIn(version); };
    hooks.on_inconsistent_continue = [this](size_t listed_so_far) {
      store_.Count([](InformerStats& stats) { ++stats.inconsistent_continues; });
      if (metrics_->inconsistent_continues != nullptr) {
        metrics_->inconsistent_continues->Increment();
      }
      Log().Info(
          "continue token expired (410); listing on from the next key at the current "
          "state, the watch repairs the difference",
          {{"resource", metrics_->resource}, {"listed", static_cast<int64_t>(listed_so_far)}});
    };
    if (settings_.deliver_first_list_pages && !store_.Synced()) {
      hooks.on_listed = [this](const std::string& key, const ObjectPtr& object,
                               internal::Entry entry) {
        return DeliverListed(key, object, std::move(entry));
      };
    }
    internal::PagedList list =
        internal::ListPages(client_, settings_.resource, options, store_, hooks, worker_stop);
    if (worker_stop.stop_requested()) {
      return;  // abandoned
    }
    if (!list.resource_version.ok()) {
      buffer_.Fail(list.resource_version.status());
      return;
    }
    // From here the watch buffers its events; those it applied while the pages were read are
    // newer than the list's (or as new) and stay.
    const internal::InformerStore::TouchedKeys touched = buffer_.TakeTouched();
    Replace(std::move(list.listed), *list.resource_version, started, /*streamed=*/false, touched,
            list.newest_listed_version);
    DrainBuffered(worker_stop);
  });
  // Wait for the first page (the watch can start) or the list's failure.
  const absl::Status first_page = buffer_.AwaitFirstPage(stop);
  if (first_page.ok() || stop.stop_requested()) {
    // Stopped: Run abandons the list on its way out. Later failures end the watch (kListFailed).
    return first_page;
  }
  AbandonList();  // joins: the worker returned after recording its failure
  return first_page;
}

internal::Entry Informer::DeliverListed(const std::string& key, const ObjectPtr& object,
                                        internal::Entry entry) {
  // Under notify_mu_, so the watch's change of the same key (it marks the key touched before it
  // applies) comes wholly before or after: skipped here, or an update of what is cached here.
  absl::MutexLock notifying(&notify_mu_);
  if (buffer_.Touched(key)) {
    return entry;  // the cache holds the watch's newer state; the replace decides
  }
  internal::Entry marker =
      internal::InformerStore::MarkerAt(internal::InformerStore::VersionOf(entry));
  if (!store_.AddListed(key, entry)) {
    return entry;  // cached by an earlier attempt of this list at another version
  }
  Notify(handlers_, [&](InformerHandler& h) { h.OnAdd(object, /*in_initial_list=*/true); });
  return marker;
}

void Informer::StartReplace(internal::ListedEntries listed, std::string resource_version,
                            std::chrono::steady_clock::time_point started) {
  AbandonList();  // joins the previous list's worker, which has finished
  buffer_.BeginReplace(resource_version);
  list_worker_ = std::jthread([this, listed = std::move(listed), rv = std::move(resource_version),
                               started](const std::stop_token& worker_stop) mutable {
    Replace(std::move(listed), rv, started, /*streamed=*/true);
    DrainBuffered(worker_stop);
  });
}

void Informer::DrainBuffered(const std::stop_token& stop) {
  buffer_.Drain(stop, [this](std::vector<internal::BufferedEvent>& batch) {
    for (auto& item : batch) {
      std::string rv = internal::InformerStore::VersionOf(item.entry);
      const ObjectPtr object = store_.Materialize(item.entry);
      ApplyChange(item.type, std::move(item.key), std::move(rv), object, std::move(item.entry));
    }
  });
}

absl::Status Informer::TakeListFailure() {
  absl::Status failed = buffer_.Failure();
  if (!failed.ok()) {
    AbandonList();  // joins: the worker returned after recording its failure
  }
  return failed;
}

void Informer::AbandonList() {
  if (list_worker_.joinable()) {
    list_worker_.request_stop();
    list_worker_.join();
  }
  buffer_.Reset();
}

void Informer::Replace(internal::ListedEntries listed, const std::string& resource_version,
                       std::chrono::steady_clock::time_point started, bool streamed,
                       const internal::InformerStore::TouchedKeys& touched,
                       int64_t newest_listed_version) {
  // One handler call at a time: the watch may still be handing over an event it applied
  // before the list stopped letting it (TakeTouched).
  absl::MutexLock notifying(&notify_mu_);
  const internal::ReconcileResult diff =
      store_.Reconcile(std::move(listed), resource_version, streamed, touched);
  if (newest_listed_version > 0) {
    // Until the watch is past what the pages held; set before a watch event the list let through
    // (TakeTouched) is applied: it waits for notify_mu_, and may be older than a later page.
    store_.GuardStaleEvents(newest_listed_version);
  }
  if (diff.lists > 1 && metrics_->relists != nullptr) {
    metrics_->relists->Increment();
  }
  if (prometheus::Counter* lists = streamed ? metrics_->streamed_lists : metrics_->paged_lists;
      lists != nullptr) {
    lists->Increment();
  }
  if (!handlers_.empty()) {
    for (const auto& key : diff.added) {
      const ObjectPtr object = store_.Get(key);
      Notify(handlers_, [&](InformerHandler& h) { h.OnAdd(object, diff.first_sync); });
    }
    for (const auto& [old_entry, key] : diff.updated) {
      const ObjectPtr old_object = store_.Materialize(old_entry);
      const ObjectPtr new_object = store_.Get(key);
      Notify(handlers_, [&](InformerHandler& h) { h.OnUpdate(old_object, new_object); });
    }
    for (const auto& entry : diff.deleted) {
      const ObjectPtr object = store_.Materialize(entry);
      Notify(handlers_, [&](InformerHandler& h) { h.OnDelete(object); });
    }
  }
  if (diff.first_sync) {
    store_.MarkSynced();
    Notify(handlers_, [](InformerHandler& h) { h.OnSynced(); });
  }
  Log().Info(diff.first_sync ? "informer synced" : "relisted",
             {{"resource", metrics_->resource},
              {"how", streamed ? "streamed list" : "paged list"},
              {"objects", static_cast<uint64_t>(Size())},
              {"added", static_cast<uint64_t>(diff.added.size())},
              {"updated", static_cast<uint64_t>(diff.updated.size())},
              {"deleted", static_cast<uint64_t>(diff.deleted.size())},
              {"changed_while_listing", static_cast<uint64_t>(touched.size())},
              {"delivered_from_pages", store_.Stats().delivered_from_pages},
              {"resource_version", resource_version},
              {"ms", MillisecondsSince(clock_, started)}});
}

Informer::WatchOutcome Informer::WatchOnce(const std::stop_token& stop, bool stream_list) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  const WatchOptions options = internal::MakeWatchOptions(
      settings_, stream_list, stream_list ? std::string() : buffer_.WatchFrom(), rng);
  store_.Count([](InformerStats& stats) { ++stats.watches; });
  const auto started = clock_.MonotonicNow();
  WatchOutcome outcome;
  internal::InitialEvents initial;
  internal::WatchEnding ending;
  // Ended by Stop() or, while a paged list is completed on the list worker, by its failure.
  std::stop_source cancel;
  const std::stop_callback forward_stop(stop, [&cancel] { cancel.request_stop(); });
  buffer_.SetWatchCancel(&cancel);
  const absl::Status status = client_.Watch(
      settings_.resource, options,
      [&](WatchEvent&& event) {
        if (stream_list && !outcome.listed) {
          return CollectInitial(std::move(event), initial, started, outcome);
        }
        return Apply(std::move(event), ending.expired, ending.event_error);
      },
      cancel.get_token());
  buffer_.SetWatchCancel(nullptr);
  ending.stopped = stop.stop_requested();
  ending.cancelled = cancel.stop_requested();
  const bool listing = stream_list && !outcome.listed;
  internal::ClassifyWatchEnd(status, ending, stream_list, outcome);
  if (outcome.end == internal::WatchEnd::kExpired) {
    store_.Count([](InformerStats& stats) { ++stats.expired; });
  } else if (!listing && (outcome.end == internal::WatchEnd::kError ||
                          outcome.end == internal::WatchEnd::kStalled)) {
    store_.Count([](InformerStats& stats) { ++stats.watch_errors; });
  }
  return outcome;
}

bool Informer::CollectInitial(WatchEvent&& event, internal::InitialEvents& initial,
                              std::chrono::steady_clock::time_point started,
                              WatchOutcome& outcome) {
  switch (event.type) {
    case WatchEventType::kAdded:
    case WatchEventType::kModified: {
      std::string key = ObjectKey(event.object);
      internal::Entry entry = store_.MakeListedEntry(key, std::move(event.object));
      initial.Upsert(std::move(key), std::move(entry));
      return true;
    }
    case WatchEventType::kDeleted:
      initial.Delete(ObjectKey(event.object));
      return true;
    case WatchEventType::kBookmark:
      if (!internal::EndsInitialEvents(event.object)) {
        return true;  // only the annotated bookmark ends the initial events
      }
      // Replaced on the list worker: this stream goes on being read (and buffered) meanwhile.
      StartReplace(initial.Take(), kube::ResourceVersionOf(event.object), started);
      outcome.listed = true;
      return true;
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
    // 410 -> `expired` (relist), anything else -> `error` (back off).
    const absl::Status status = StatusFromApiStatus(
        absl::StrCat("WATCH ", settings_.resource.CollectionPath()), event.object);
    if (IsGone(status)) {
      expired = true;
    } else {
      error = status;
    }
    return false;
  }
  std::string rv = kube::ResourceVersionOf(event.object);
  if (event.type == WatchEventType::kBookmark) {
    if (!rv.empty()) {
      buffer_.NoteVersion(std::move(rv));
    }
    return true;
  }
  std::string key = ObjectKey(event.object);
  const ObjectPtr object = store_.Prepare(std::move(event.object));
  // For DELETED the buffered entry is the final state, for OnDelete.
  if (buffer_.Buffer(event.type, key, rv, [&] { return store_.MakeEntry(object); })) {
    return true;  // applied after the list's replace, by the list worker
  }
  // No list, or a paged list's pages are being read: applied (and handed to handlers) now.
  internal::Entry entry =
      event.type == WatchEventType::kDeleted ? internal::Entry{} : store_.MakeEntry(object);
  ApplyChange(event.type, std::move(key), std::move(rv), object, std::move(entry));
  return true;
}

void Informer::ApplyChange(WatchEventType type, std::string key, std::string resource_version,
                           const ObjectPtr& object, internal::Entry entry) {
  absl::MutexLock notifying(&notify_mu_);
  const internal::ChangeResult change =
      store_.Apply(type, std::move(key), std::move(resource_version), std::move(entry));
  if (!change.applied || handlers_.empty()) {
    return;
  }
  if (type == WatchEventType::kDeleted) {
    if (change.old.has_value()) {
      Notify(handlers_, [&](InformerHandler& h) { h.OnDelete(object); });
    }
  } else if (change.old.has_value()) {
    const ObjectPtr old_object = store_.Materialize(*change.old);
    Notify(handlers_, [&](InformerHandler& h) { h.OnUpdate(old_object, object); });
  } else {
    Notify(handlers_, [&](InformerHandler& h) { h.OnAdd(object, false); });
  }
}

}  // namespace mmi::kube
