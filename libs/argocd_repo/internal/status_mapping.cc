#include "libs/argocd_repo/internal/status_mapping.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace mmi::argocd_repo::internal {

absl::Status FromRepoServerStatus(const grpc::Status& status, std::string_view operation,
                                  std::string_view what) {
  const std::string message =
      absl::StrCat("argocd-repo-server ", std::string(operation), " of ", std::string(what),
                   ": gRPC ", static_cast<int>(status.error_code()), ": ", status.error_message());
  switch (status.error_code()) {
    case grpc::StatusCode::OK:
      return absl::OkStatus();
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::CANCELLED:
      return absl::UnavailableError(message);
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return absl::DeadlineExceededError(message);
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return absl::ResourceExhaustedError(message);
    case grpc::StatusCode::UNIMPLEMENTED:
      return absl::FailedPreconditionError(
          absl::StrCat(message,
                       "; the server does not implement repository.RepoServerService: check that "
                       "the address is argocd-repo-server's gRPC port (8081)"));
    default:
      return absl::FailedPreconditionError(message);
  }
}

}  // namespace mmi::argocd_repo::internal
