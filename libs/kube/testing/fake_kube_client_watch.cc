// FakeKubeClient's watches: where a watch starts, what it is sent from the history, and the
// test controls that end, expire, pause or feed open watches. The other verbs are in
// fake_kube_client.cc.
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "libs/common/status_macros.h"
#include "libs/kube/testing/fake_kube_client.h"
#include "libs/kube/testing/internal/fake_api.h"

namespace mmi::kube::testing {
namespace {

using internal::ApiError;
using internal::FailureStatus;
using internal::InScope;
using internal::MatchesFields;
using internal::MatchesLabels;
using nlohmann::json;

// The BOOKMARK that ends a streamed list's initial events at `rv`.
WatchEvent InitialEventsEnd(int64_t rv) {
  return {WatchEventType::kBookmark,
          {{"kind", "Bookmark"},
           {"metadata",
            {{"resourceVersion", std::to_string(rv)},
             {"annotations", {{kInitialEventsEndAnnotation, "true"}}}}}}};
}

// Holds a mutex while the fake's state is read and gives it up around handler calls (a handler
// may call back into the fake). Released on destruction.
class HandOverLock {
 public:
  explicit HandOverLock(absl::Mutex& mu) ABSL_NO_THREAD_SAFETY_ANALYSIS : mu_(mu) { mu_.Lock(); }
  ~HandOverLock() { Unlock(); }
  HandOverLock(const HandOverLock&) = delete;
  HandOverLock& operator=(const HandOverLock&) = delete;
  void Unlock() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    if (locked_) {
      mu_.Unlock();
      locked_ = false;
    }
  }
  void Lock() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    if (!locked_) {
      mu_.Lock();
      locked_ = true;
    }
  }

 private:
  absl::Mutex& mu_;
  bool locked_ = true;
};

}  // namespace

std::vector<WatchEvent> FakeKubeClient::CurrentStateLocked(const std::string& collection,
                                                           const WatchMatcher& matches) const {
  std::vector<WatchEvent> events;
  if (const auto coll = objects_.find(collection); coll != objects_.end()) {
    for (const auto& [key, object] : coll->second) {
      if (matches(object)) {
        events.push_back({WatchEventType::kAdded, object});
      }
    }
  }
  return events;
}

absl::StatusOr<int64_t> FakeKubeClient::WatchStartLocked(const ResourceRef& ref,
                                                         const WatchOptions& options,
                                                         const WatchMatcher& matches,
                                                         std::vector<WatchEvent>& initial,
                                                         bool& awaiting_initial_events_end) {
  if (options.send_initial_events) {
    initial = CurrentStateLocked(CollectionId(ref), matches);
    if (initial_events_end_held_) {
      awaiting_initial_events_end = true;
    } else {
      initial.push_back(InitialEventsEnd(rv_));
    }
    return rv_;
  }
  if (options.resource_version.empty() || options.resource_version == "0") {
    // "Start at the most recent": synthetic ADDED events for the current state first.
    initial = CurrentStateLocked(CollectionId(ref), matches);
    return rv_;
  }
  int64_t start_rv = 0;
  if (!absl::SimpleAtoi(options.resource_version, &start_rv)) {
    return ApiError(absl::StrCat("WATCH ", ref.CollectionPath()), 400, "BadRequest",
                    absl::StrCat("invalid resourceVersion ", options.resource_version));
  }
  return start_rv;
}

int64_t FakeKubeClient::CursorAfterLocked(int64_t rv) const {
  for (const auto& e : history_) {
    if (e.rv > rv) {
      return e.seq;
    }
  }
  return next_seq_;
}

void FakeKubeClient::CollectEventsLocked(int id, int64_t cursor, const std::string& collection,
                                         bool allow_bookmarks, const WatchMatcher& matches,
                                         std::vector<WatchEvent>& pending) {
  for (const auto& e : history_) {
    if (e.seq < cursor) {
      continue;
    }
    if (e.collection.empty()) {
      if (watches_[id].awaiting_initial_events_end) {
        WatchEvent end = e.event;
        end.object["metadata"]["annotations"][std::string(kInitialEventsEndAnnotation)] = "true";
        pending.push_back(std::move(end));
        watches_[id].awaiting_initial_events_end = false;
      } else if (allow_bookmarks) {
        pending.push_back(e.event);
      }
    } else if (e.collection == collection && matches(e.event.object)) {
      pending.push_back(e.event);
    }
  }
}

bool FakeKubeClient::AwaitWatchLocked(int id, int64_t cursor, const std::stop_token& stop) {
  const auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const OpenWatch& w = watches_[id];
    return w.end || w.expired || (!paused_ && !history_.empty() && history_.back().seq >= cursor);
  };
  const auto ready_or_stopped = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return ready() || stop.stop_requested();
  };
  mu_.Await(absl::Condition(&ready_or_stopped));
  return ready();
}

ABSL_NO_THREAD_SAFETY_ANALYSIS absl::Status FakeKubeClient::Watch(const ResourceRef& ref,
                                                                  const WatchOptions& options,
                                                                  const WatchHandler& handler,
                                                                  std::stop_token stop) {
  // A stop request wakes the wait below: releasing mu_ makes Await re-check its condition.
  // Registered before mu_ is taken (a callback for a stop already requested runs right here).
  const std::stop_callback wake(stop, [this] { absl::MutexLock wake_lock(&mu_); });
  HandOverLock lock(mu_);
  Record({"WATCH", ref, "", nullptr,
          options.send_initial_events ? "sendInitialEvents" : options.resource_version});
  if (absl::Status s = TakeFailure("WATCH"); !s.ok()) {
    return s;
  }
  const std::string context = absl::StrCat("WATCH ", ref.CollectionPath());
  const std::string collection = CollectionId(ref);
  const WatchMatcher matches = [&](const json& object) {
    return InScope(ref, object) && MatchesLabels(object, options.label_selector) &&
           MatchesFields(object, options.field_selector);
  };
  if (options.send_initial_events && !watch_list_supported_) {
    lock.Unlock();
    handler({WatchEventType::kError,
             FailureStatus(500, "InternalError",
                           "a watch stream was requested by the client but the required storage "
                           "feature RequestWatchProgress is disabled")});
    return absl::OkStatus();
  }
  std::vector<WatchEvent> pending;
  bool awaiting_initial_events_end = false;
  ASSIGN_OR_RETURN(const int64_t start_rv,
                   WatchStartLocked(ref, options, matches, pending, awaiting_initial_events_end));
  json gone =
      FailureStatus(410, "Expired",
                    absl::StrCat("too old resource version: ", start_rv, " (", compacted_rv_, ")"));
  if (start_rv < compacted_rv_) {
    if (gone_as_http_error_) {
      return ApiError(context, 410, "Expired", gone["message"].get<std::string>());
    }
    lock.Unlock();
    handler({WatchEventType::kError, gone});
    return absl::OkStatus();
  }
  // Position: the first history entry newer than start_rv.
  int64_t cursor = CursorAfterLocked(start_rv);
  const int id = next_watch_id_++;
  watches_[id].id = id;
  watches_[id].awaiting_initial_events_end = awaiting_initial_events_end;
  auto finish = [&](absl::Status status) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    lock.Lock();
    watches_.erase(id);
    return status;
  };
  while (true) {
    if (!pending.empty()) {
      lock.Unlock();
      for (auto& event : pending) {
        if (!handler(std::move(event))) {
          return finish(absl::OkStatus());
        }
      }
      pending.clear();
      lock.Lock();
    }
    if (!AwaitWatchLocked(id, cursor, stop)) {
      return finish(absl::CancelledError(absl::StrCat(context, ": stopped")));
    }
    const OpenWatch w = watches_[id];
    if (w.expired) {
      lock.Unlock();
      gone["message"] = "too old resource version (compacted)";
      handler({WatchEventType::kError, gone});
      return finish(absl::OkStatus());
    }
    if (w.end) {
      return finish(w.end_status);
    }
    CollectEventsLocked(id, cursor, collection, options.allow_bookmarks, matches, pending);
    cursor = history_.back().seq + 1;
  }
}

void FakeKubeClient::CloseWatches() { BreakWatches(absl::OkStatus()); }

void FakeKubeClient::BreakWatches(const absl::Status& status) {
  absl::MutexLock lock(&mu_);
  for (auto& [id, w] : watches_) {
    w.end = true;
    w.end_status = status;
  }
}

void FakeKubeClient::Compact(bool expire_open_watches) {
  absl::MutexLock lock(&mu_);
  compacted_rv_ = rv_;
  history_.clear();
  for (auto& [id, w] : watches_) {
    w.expired = w.expired || expire_open_watches;
  }
}

void FakeKubeClient::SetWatchListSupported(bool supported) {
  absl::MutexLock lock(&mu_);
  watch_list_supported_ = supported;
}

void FakeKubeClient::SetInitialEventsEndHeld(bool held) {
  absl::MutexLock lock(&mu_);
  initial_events_end_held_ = held;
}

void FakeKubeClient::SetWatchDeliveryPaused(bool paused) {
  absl::MutexLock lock(&mu_);
  paused_ = paused;
}

void FakeKubeClient::SendBookmark() {
  absl::MutexLock lock(&mu_);
  StoredEvent stored;
  stored.seq = next_seq_++;
  stored.rv = rv_;
  stored.event.type = WatchEventType::kBookmark;
  stored.event.object = {{"kind", "Bookmark"},
                         {"metadata", {{"resourceVersion", std::to_string(rv_)}}}};
  history_.push_back(std::move(stored));
}

void FakeKubeClient::SetGoneAsHttpError(bool http_error) {
  absl::MutexLock lock(&mu_);
  gone_as_http_error_ = http_error;
}

int FakeKubeClient::OpenWatches() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(watches_.size());
}

bool FakeKubeClient::WaitForOpenWatches(int count, std::chrono::milliseconds timeout) const {
  absl::MutexLock lock(&mu_);
  const auto enough = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return static_cast<int>(watches_.size()) >= count;
  };
  return mu_.AwaitWithTimeout(absl::Condition(&enough), absl::FromChrono(timeout));
}

}  // namespace mmi::kube::testing
