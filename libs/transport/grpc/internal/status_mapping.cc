#include "libs/transport/grpc/internal/status_mapping.h"

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "libs/transport/errors.h"
#include "libs/transport/grpc/internal/credentials.h"

namespace mmi::transport::internal {
namespace {

bool Contains(const std::string& text, std::string_view needle) {
  return text.find(needle) != std::string::npos;
}

absl::Status Map(const grpc::Status& status, const std::string& message, bool publish,
                 std::string_view cluster) {
  const std::string& server = status.error_message();
  switch (status.error_code()) {
    case grpc::StatusCode::OK:
      return absl::OkStatus();
    case grpc::StatusCode::UNKNOWN:
      switch (ClassifyRefusal(status, /*tls=*/false)) {
        case Refusal::kAuthentication:
          return absl::UnauthenticatedError(message);
        case Refusal::kAuthorization:
          return absl::PermissionDeniedError(message);
        default:
          break;
      }
      if (publish && (Contains(server, "fk_resources_consumers") || Contains(server, "23503"))) {
        return UnknownConsumerError(cluster, server);
      }
      if (Contains(server, "maestro-7")) {
        return absl::NotFoundError(message);
      }
      if (Contains(server, "maestro-6")) {
        return absl::AlreadyExistsError(message);
      }
      if (Contains(server, "maestro-8") || Contains(server, "maestro-17") ||
          Contains(server, "maestro-21")) {
        return absl::InvalidArgumentError(message);
      }
      return absl::UnavailableError(message);
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::OUT_OF_RANGE:
      return absl::InvalidArgumentError(message);
    case grpc::StatusCode::FAILED_PRECONDITION:
      return absl::FailedPreconditionError(message);
    case grpc::StatusCode::UNIMPLEMENTED:
      return absl::FailedPreconditionError(absl::StrCat(
          message,
          "; the server does not implement io.cloudevents.v1.CloudEventService: check "
          "that transport.grpc.url points to Maestro's gRPC source server (port 8090)"));
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return absl::DeadlineExceededError(message);
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return absl::ResourceExhaustedError(message);
    case grpc::StatusCode::NOT_FOUND:
      return absl::NotFoundError(message);
    case grpc::StatusCode::ALREADY_EXISTS:
    case grpc::StatusCode::ABORTED:
      return absl::AlreadyExistsError(message);
    case grpc::StatusCode::PERMISSION_DENIED:
      return absl::PermissionDeniedError(message);
    case grpc::StatusCode::UNAUTHENTICATED:
      return absl::UnauthenticatedError(message);
    case grpc::StatusCode::INTERNAL:
      return absl::InternalError(message);
    case grpc::StatusCode::CANCELLED:
    case grpc::StatusCode::UNAVAILABLE:
    default:
      return absl::UnavailableError(message);
  }
}

}  // namespace

absl::Status FromPublishStatus(const grpc::Status& status, std::string_view cluster) {
  return Map(
      status,
      absl::StrCat("Maestro refused the event for cluster \"", std::string(cluster), "\": gRPC ",
                   static_cast<int>(status.error_code()), ": ", status.error_message()),
      true, cluster);
}

absl::Status FromGrpcStatus(const grpc::Status& status, std::string_view context) {
  return Map(status,
             absl::StrCat(std::string(context), ": gRPC ", static_cast<int>(status.error_code()),
                          ": ", status.error_message()),
             false, "");
}

}  // namespace mmi::transport::internal
