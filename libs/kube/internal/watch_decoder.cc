#include "libs/kube/internal/watch_decoder.h"

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"

namespace mmi::kube::internal {
namespace {

std::string Excerpt(std::string_view text) {
  constexpr size_t kMax = 120;
  return std::string(text.substr(0, kMax)) + (text.size() > kMax ? "..." : "");
}

}  // namespace

absl::StatusOr<WatchEvent> ParseWatchEvent(std::string_view line) {
  nlohmann::json parsed = nlohmann::json::parse(line.begin(), line.end(), nullptr, false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    return absl::DataLossError(
        absl::StrCat("watch stream: malformed event (not a JSON object): ", Excerpt(line)));
  }
  const auto type = parsed.find("type");
  const auto object = parsed.find("object");
  if (type == parsed.end() || !type->is_string() || object == parsed.end() ||
      !object->is_object()) {
    return absl::DataLossError(absl::StrCat(
        "watch stream: event without a string \"type\" and an object \"object\": ", Excerpt(line)));
  }
  WatchEvent event;
  const std::string& name = type->get_ref<const std::string&>();
  if (name == "ADDED") {
    event.type = WatchEventType::kAdded;
  } else if (name == "MODIFIED") {
    event.type = WatchEventType::kModified;
  } else if (name == "DELETED") {
    event.type = WatchEventType::kDeleted;
  } else if (name == "BOOKMARK") {
    event.type = WatchEventType::kBookmark;
  } else if (name == "ERROR") {
    event.type = WatchEventType::kError;
  } else {
    return absl::DataLossError(absl::StrCat("watch stream: unknown event type \"", name, "\""));
  }
  event.object = std::move(*object);
  return event;
}

absl::StatusOr<bool> WatchDecoder::Emit(std::string_view line, const WatchHandler& handler) {
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) {
    line.remove_suffix(1);
  }
  if (line.empty()) {
    return true;
  }
  absl::StatusOr<WatchEvent> event = ParseWatchEvent(line);
  if (!event.ok()) {
    return event.status();
  }
  if (!handler(*std::move(event))) {
    stopped_ = true;
    return false;
  }
  return true;
}

absl::StatusOr<bool> WatchDecoder::Feed(std::string_view chunk, const WatchHandler& handler) {
  if (stopped_) {
    return false;
  }
  while (!chunk.empty()) {
    const size_t newline = chunk.find('\n');
    if (newline == std::string_view::npos) {
      if (pending_.size() + chunk.size() > max_event_bytes_) {
        return absl::DataLossError(
            absl::StrCat("watch stream: event larger than ", max_event_bytes_, " bytes"));
      }
      pending_.append(chunk);
      return true;
    }
    absl::StatusOr<bool> keep_going = true;
    if (pending_.empty()) {
      keep_going = Emit(chunk.substr(0, newline), handler);  // common case: no copy
    } else {
      pending_.append(chunk.substr(0, newline));
      const std::string line = std::move(pending_);
      pending_.clear();
      keep_going = Emit(line, handler);
    }
    if (!keep_going.ok() || !*keep_going) {
      return keep_going;
    }
    chunk.remove_prefix(newline + 1);
  }
  return true;
}

absl::StatusOr<bool> WatchDecoder::Finish(const WatchHandler& handler) {
  if (stopped_ || pending_.empty()) {
    return !stopped_;
  }
  const std::string line = std::move(pending_);
  pending_.clear();
  return Emit(line, handler);
}

}  // namespace mmi::kube::internal
