// Incremental decoding of a watch response body: newline-delimited JSON events that may arrive
// split across HTTP/1.1 chunks or HTTP/2 DATA frames in any way.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "libs/kube/kube_client.h"

namespace mmi::kube::internal {

// Parses one event line: {"type": "ADDED", "object": {...}}. kDataLoss when malformed.
absl::StatusOr<WatchEvent> ParseWatchEvent(std::string_view line);

// Not thread-safe: one per watch stream.
class WatchDecoder {
 public:
  static constexpr size_t kDefaultMaxEventBytes = size_t{64} << 20;
  explicit WatchDecoder(size_t max_event_bytes = kDefaultMaxEventBytes)
      : max_event_bytes_(max_event_bytes) {}

  // Appends `chunk` and hands each completed event to `handler`. Returns false once the handler
  // asked to stop (later bytes are ignored), true to keep going, kDataLoss for a malformed event
  // or one larger than the limit.
  absl::StatusOr<bool> Feed(std::string_view chunk, const WatchHandler& handler);

  // At a clean end of stream: emits a last event that lacked its trailing newline. kDataLoss
  // when the buffered bytes are not a whole event (the stream was cut inside an event).
  absl::StatusOr<bool> Finish(const WatchHandler& handler);

  // Bytes of an unfinished event are buffered.
  bool HasPartialEvent() const { return !pending_.empty(); }

 private:
  absl::StatusOr<bool> Emit(std::string_view line, const WatchHandler& handler);

  const size_t max_event_bytes_;
  std::string pending_;
  bool stopped_ = false;
};

}  // namespace mmi::kube::internal
