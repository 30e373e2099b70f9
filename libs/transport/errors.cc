#include "libs/transport/errors.h"

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"

namespace mmi::transport {
namespace {

// Status payload type URL marking an unknown-consumer error; the payload is the cluster name.
constexpr char kUnknownConsumerUrl[] = "type.mmi.dev/transport.UnknownConsumer";

}  // namespace

absl::Status UnknownConsumerError(std::string_view cluster, std::string_view detail) {
  absl::Status status(
      absl::StatusCode::kFailedPrecondition,
      absl::StrCat("cluster '", std::string(cluster),
                   "' is not a registered Maestro consumer; create it via POST "
                   "/api/maestro/v1/consumers (MaestroConsumerRegistry::EnsureConsumer) and "
                   "publish again; server said: ",
                   std::string(detail)));
  status.SetPayload(kUnknownConsumerUrl, absl::Cord(std::string(cluster)));
  return status;
}

bool IsUnknownConsumer(const absl::Status& status) {
  return status.code() == absl::StatusCode::kFailedPrecondition &&
         status.GetPayload(kUnknownConsumerUrl).has_value();
}

std::optional<std::string> UnknownConsumerCluster(const absl::Status& status) {
  if (!IsUnknownConsumer(status)) {
    return std::nullopt;
  }
  return std::string(*status.GetPayload(kUnknownConsumerUrl));
}

bool IsRetryable(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kResourceExhausted:
      return true;
    default:
      return false;
  }
}

}  // namespace mmi::transport
