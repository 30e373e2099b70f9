#include "libs/transport/grpc/internal/status_mapping.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "libs/transport/errors.h"

namespace mmi::transport::internal {
namespace {

using ::testing::HasSubstr;

// The message Maestro's source server sends for a create aimed at an unregistered consumer
// (maestro-protocol.md §7.4).
constexpr char kUnknownConsumer[] =
    "failed to create resource: maestro-9: Unable to create Resource: ERROR: insert or update on "
    "table \"resources\" violates foreign key constraint \"fk_resources_consumers\" (SQLSTATE "
    "23503)";

TEST(StatusMappingTest, ForeignKeyViolationBecomesUnknownConsumer) {
  const absl::Status status =
      FromPublishStatus(grpc::Status(grpc::StatusCode::UNKNOWN, kUnknownConsumer), "cluster7");
  EXPECT_TRUE(IsUnknownConsumer(status));
  EXPECT_EQ(UnknownConsumerCluster(status), "cluster7");
  EXPECT_THAT(std::string(status.message()), HasSubstr("fk_resources_consumers"));
}

TEST(StatusMappingTest, OtherUnknownErrorsFollowMaestrosErrorCodes) {
  auto map = [](const char* text) {
    return FromPublishStatus(grpc::Status(grpc::StatusCode::UNKNOWN, text), "c").code();
  };
  EXPECT_EQ(map("failed to get resource: maestro-7: Resource with id='x' not found"),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(map("failed to update resource: maestro-6: conflict"),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(map("maestro-8: validation failed"), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(map("something went wrong"), absl::StatusCode::kUnavailable);
}

TEST(StatusMappingTest, StandardCodesKeepTheirMeaning) {
  auto map = [](grpc::StatusCode code) {
    return FromPublishStatus(grpc::Status(code, "x"), "c").code();
  };
  EXPECT_EQ(map(grpc::StatusCode::OK), absl::StatusCode::kOk);
  EXPECT_EQ(map(grpc::StatusCode::UNAVAILABLE), absl::StatusCode::kUnavailable);
  EXPECT_EQ(map(grpc::StatusCode::DEADLINE_EXCEEDED), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(map(grpc::StatusCode::INVALID_ARGUMENT), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(map(grpc::StatusCode::FAILED_PRECONDITION), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(map(grpc::StatusCode::CANCELLED), absl::StatusCode::kUnavailable);
  EXPECT_EQ(map(grpc::StatusCode::UNAUTHENTICATED), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(map(grpc::StatusCode::UNIMPLEMENTED), absl::StatusCode::kFailedPrecondition);
}

// The pinned server's authentication and authorization refusals are plain Go errors (UNKNOWN):
// they are credentials problems, not the retryable UNKNOWN of a failed handler.
TEST(StatusMappingTest, MaestrosCredentialRefusalsAreNotRetryableUnknowns) {
  EXPECT_EQ(FromPublishStatus(grpc::Status(grpc::StatusCode::UNKNOWN, "token not authenticated"),
                              "cluster1")
                .code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(FromPublishStatus(grpc::Status(grpc::StatusCode::UNKNOWN,
                                           "unauthorized to publish the event from source s"),
                              "cluster1")
                .code(),
            absl::StatusCode::kPermissionDenied);
}

TEST(StatusMappingTest, ForeignKeyTextOutsidePublishIsNotAnUnknownConsumer) {
  const absl::Status status =
      FromGrpcStatus(grpc::Status(grpc::StatusCode::UNKNOWN, kUnknownConsumer), "subscribe");
  EXPECT_FALSE(IsUnknownConsumer(status));
}

}  // namespace
}  // namespace mmi::transport::internal
