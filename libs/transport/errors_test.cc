#include "libs/transport/errors.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace mmi::transport {
namespace {

using ::testing::HasSubstr;

TEST(ErrorsTest, UnknownConsumerIsAFailedPreconditionThatNamesTheClusterAndTheFix) {
  const absl::Status status = UnknownConsumerError("cluster1", "fk_resources_consumers");
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(IsUnknownConsumer(status));
  EXPECT_EQ(UnknownConsumerCluster(status), "cluster1");
  EXPECT_THAT(std::string(status.message()), HasSubstr("cluster1"));
  EXPECT_THAT(std::string(status.message()), HasSubstr("/api/maestro/v1/consumers"));
  EXPECT_FALSE(IsRetryable(status));
}

TEST(ErrorsTest, AnOrdinaryFailedPreconditionIsNotAnUnknownConsumer) {
  const absl::Status status = absl::FailedPreconditionError("cluster1 is not registered");
  EXPECT_FALSE(IsUnknownConsumer(status));
  EXPECT_EQ(UnknownConsumerCluster(status), std::nullopt);
}

TEST(ErrorsTest, RetryableCodesAreTheTransientOnes) {
  EXPECT_TRUE(IsRetryable(absl::UnavailableError("x")));
  EXPECT_TRUE(IsRetryable(absl::DeadlineExceededError("x")));
  EXPECT_TRUE(IsRetryable(absl::ResourceExhaustedError("x")));
  EXPECT_FALSE(IsRetryable(absl::InvalidArgumentError("x")));
  EXPECT_FALSE(IsRetryable(absl::OkStatus()));
}

}  // namespace
}  // namespace mmi::transport
