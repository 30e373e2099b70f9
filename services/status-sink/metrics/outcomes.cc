#include "services/status-sink/metrics/outcomes.h"

namespace mmi::status_sink {

std::string_view DropReasonName(DropReason reason) {
  switch (reason) {
    case DropReason::kStale:
      return "stale";
    case DropReason::kDuplicate:
      return "duplicate";
    case DropReason::kMalformed:
      return "malformed";
    case DropReason::kNotStatus:
      return "not_status";
    case DropReason::kNoFeedback:
      return "no_feedback";
    case DropReason::kUnknownResource:
      return "unknown_resource";
    case DropReason::kClusterMismatch:
      return "cluster_mismatch";
    case DropReason::kQueueFull:
      return "queue_full";
    case DropReason::kOverflow:
      return "overflow";
    case DropReason::kUnchanged:
      return "unchanged";
    case DropReason::kVolatileShed:
      return "volatile_shed";
    case DropReason::kDeletedWhileLive:
      return "deleted_while_live";
    case DropReason::kManifestsNotHeld:
      return "manifests_not_held";
  }
  return "other";
}

std::string_view WriteResultName(WriteResult result) {
  switch (result) {
    case WriteResult::kOk:
      return "ok";
    case WriteResult::kNotFound:
      return "not_found";
    case WriteResult::kInvalid:
      return "invalid";
    case WriteResult::kRetry:
      return "retry";
  }
  return "other";
}

}  // namespace mmi::status_sink
