#include "libs/argocd_repo/internal/status_mapping.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace mmi::argocd_repo::internal {
namespace {

absl::StatusCode CodeOf(grpc::StatusCode code) {
  return FromRepoServerStatus(grpc::Status(code, "m"), "GenerateManifest", "r").code();
}

TEST(FromRepoServerStatusTest, ServerAnswersAreRenderErrorsAndTransportFailuresAreRetryable) {
  EXPECT_EQ(CodeOf(grpc::StatusCode::OK), absl::StatusCode::kOk);
  for (grpc::StatusCode render :
       {grpc::StatusCode::UNKNOWN, grpc::StatusCode::INVALID_ARGUMENT, grpc::StatusCode::NOT_FOUND,
        grpc::StatusCode::FAILED_PRECONDITION, grpc::StatusCode::INTERNAL,
        grpc::StatusCode::UNAUTHENTICATED, grpc::StatusCode::PERMISSION_DENIED}) {
    EXPECT_EQ(CodeOf(render), absl::StatusCode::kFailedPrecondition) << render;
  }
  EXPECT_EQ(CodeOf(grpc::StatusCode::UNAVAILABLE), absl::StatusCode::kUnavailable);
  EXPECT_EQ(CodeOf(grpc::StatusCode::CANCELLED), absl::StatusCode::kUnavailable);
  EXPECT_EQ(CodeOf(grpc::StatusCode::DEADLINE_EXCEEDED), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(CodeOf(grpc::StatusCode::RESOURCE_EXHAUSTED), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(CodeOf(grpc::StatusCode::UNIMPLEMENTED), absl::StatusCode::kFailedPrecondition);
}

TEST(FromRepoServerStatusTest, TheMessageNamesTheCallTheSourceAndTheServerText) {
  const absl::Status status = FromRepoServerStatus(
      grpc::Status(grpc::StatusCode::UNKNOWN, "failed to unmarshal \"bad.yaml\""),
      "GenerateManifest", "git://h/r.git path plain at \"main\"");
  EXPECT_EQ(status.message(),
            "argocd-repo-server GenerateManifest of git://h/r.git path plain at \"main\": gRPC 2: "
            "failed to unmarshal \"bad.yaml\"");
  EXPECT_THAT(std::string(FromRepoServerStatus(grpc::Status(grpc::StatusCode::UNIMPLEMENTED, ""),
                                               "ResolveRevision", "r")
                              .message()),
              ::testing::HasSubstr("gRPC port (8081)"));
}

}  // namespace
}  // namespace mmi::argocd_repo::internal
