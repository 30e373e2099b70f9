#include "libs/common/status_label.h"

namespace mmi {

std::string_view StatusCodeLabel(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk:
      return "ok";
    case absl::StatusCode::kUnavailable:
      return "unavailable";
    case absl::StatusCode::kDeadlineExceeded:
      return "deadline_exceeded";
    case absl::StatusCode::kResourceExhausted:
      return "resource_exhausted";
    case absl::StatusCode::kInvalidArgument:
      return "invalid_argument";
    case absl::StatusCode::kFailedPrecondition:
      return "failed_precondition";
    case absl::StatusCode::kNotFound:
      return "not_found";
    case absl::StatusCode::kAlreadyExists:
      return "already_exists";
    default:
      return "other";
  }
}

}  // namespace mmi
