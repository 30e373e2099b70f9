#include "libs/kube/internal/informer_watch.h"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "absl/strings/match.h"
#include "libs/kube/errors.h"
#include "libs/kube/informer_settings.h"

namespace mmi::kube::internal {

const char* WatchEndLabel(WatchEnd end) {
  switch (end) {
    case WatchEnd::kClosed:
      return "closed";
    case WatchEnd::kExpired:
      return "expired";
    case WatchEnd::kError:
      return "error";
    case WatchEnd::kStalled:
      return "stalled";
    case WatchEnd::kStopped:
      return "stopped";
    case WatchEnd::kListFailed:
      return "list_failed";
  }
  return "error";
}

void ClassifyWatchEnd(const absl::Status& status, const WatchEnding& ending, bool stream_list,
                      WatchOutcome& outcome) {
  if (ending.stopped) {
    outcome.end = WatchEnd::kStopped;
  } else if (ending.cancelled) {
    outcome.end = WatchEnd::kListFailed;
  } else if (absl::IsCancelled(status)) {
    outcome.end = WatchEnd::kStopped;
  } else if (stream_list && !outcome.listed) {
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
  } else if (ending.expired || IsGone(status)) {
    outcome.end = WatchEnd::kExpired;
  } else if (!ending.event_error.ok() || !status.ok()) {
    outcome.error = !ending.event_error.ok() ? ending.event_error : status;
    outcome.end = absl::IsDeadlineExceeded(status) ? WatchEnd::kStalled : WatchEnd::kError;
  } else {
    outcome.end = WatchEnd::kClosed;
  }
}

WatchOptions MakeWatchOptions(const InformerSettings& settings, bool stream_list, std::string from,
                              std::mt19937_64& rng) {
  const int64_t lo = settings.min_watch_timeout.count();
  const int64_t hi = std::max(lo, static_cast<int64_t>(settings.max_watch_timeout.count()));
  WatchOptions options;
  options.label_selector = settings.label_selector;
  options.field_selector = settings.field_selector;
  options.allow_bookmarks = true;
  options.stall_timeout = settings.stall_timeout;
  if (stream_list) {
    options.send_initial_events = true;  // from a consistent read: resource_version stays ""
    options.timeout = settings.watch_list_timeout;
  } else {
    options.resource_version = std::move(from);
    options.timeout = std::chrono::seconds(std::uniform_int_distribution<int64_t>(lo, hi)(rng));
  }
  return options;
}

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

void InitialEvents::Upsert(std::string key, Entry entry) {
  const auto [it, inserted] = index_.try_emplace(key, items_.size());
  if (inserted) {
    items_.emplace_back(std::move(key), std::move(entry));
  } else {
    items_[it->second].second = std::move(entry);
  }
}

void InitialEvents::Delete(const std::string& key) {
  const auto it = index_.find(key);
  if (it != index_.end()) {
    items_[it->second].first.clear();
    index_.erase(it);
  }
}

ListedEntries InitialEvents::Take() {
  index_ = {};
  ListedEntries items = std::move(items_);
  items_ = {};
  return items;
}

}  // namespace mmi::kube::internal
