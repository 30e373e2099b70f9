// What became of a status event and of a hub write: the closed label sets the sink counts under
// (metrics.h) and that its pure parts (decoding/status_report.h, writes/writer.h) hand back.
#pragma once

#include <string_view>

namespace mmi::status_sink {

enum class DropReason {
  kStale,
  kDuplicate,
  kMalformed,
  kNotStatus,
  kNoFeedback,
  kUnknownResource,
  kClusterMismatch,
  kQueueFull,
  kOverflow,
  kUnchanged,
  kVolatileShed,  // a waiting volatile-only write dropped to make room (coalescer full)
  // Deleted=True for a resource that is not being deleted (never asked, or re-created since):
  // a late or redelivered report; the resource stays live.
  kDeletedWhileLive,
  // A report of a resource in manifest delivery whose rendered manifests the sink could not
  // load (its bundle changed again while they were read): asked for again by the resync of lost
  // reports, as an overflow is.
  kManifestsNotHeld,
};
std::string_view DropReasonName(DropReason reason);

enum class WriteResult { kOk, kNotFound, kInvalid, kRetry };
std::string_view WriteResultName(WriteResult result);

}  // namespace mmi::status_sink
