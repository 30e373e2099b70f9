// The repo-server's gRPC errors mapped to the codes RepoServerClient promises
// (repo_server_client.h).
#pragma once

#include <grpcpp/support/status.h>

#include <string_view>

#include "absl/status/status.h"

namespace mmi::argocd_repo::internal {

// `operation` names the call and `what` its subject, e.g. ("GenerateManifest",
// "git://host/repo.git path plain at main"); both lead the message. The repo-server answers a
// render failure with UNKNOWN (a plain Go error), or INVALID_ARGUMENT, NOT_FOUND,
// FAILED_PRECONDITION, INTERNAL or UNAUTHENTICATED (some of its checks use status codes): all are
// kFailedPrecondition, "the source does not render", with the server's message. UNAVAILABLE and
// CANCELLED are kUnavailable, DEADLINE_EXCEEDED kDeadlineExceeded, RESOURCE_EXHAUSTED
// kResourceExhausted, UNIMPLEMENTED kFailedPrecondition naming the likely wrong address.
absl::Status FromRepoServerStatus(const grpc::Status& status, std::string_view operation,
                                  std::string_view what);

}  // namespace mmi::argocd_repo::internal
