#include "libs/common/status_label.h"

#include <gtest/gtest.h>

namespace mmi {
namespace {

TEST(StatusCodeLabelTest, NamesTheCodesPeersAnswerWithAndFoldsTheRest) {
  EXPECT_EQ(StatusCodeLabel(absl::StatusCode::kOk), "ok");
  EXPECT_EQ(StatusCodeLabel(absl::StatusCode::kUnavailable), "unavailable");
  EXPECT_EQ(StatusCodeLabel(absl::StatusCode::kDeadlineExceeded), "deadline_exceeded");
  EXPECT_EQ(StatusCodeLabel(absl::StatusCode::kResourceExhausted), "resource_exhausted");
  EXPECT_EQ(StatusCodeLabel(absl::StatusCode::kInvalidArgument), "invalid_argument");
  EXPECT_EQ(StatusCodeLabel(absl::StatusCode::kFailedPrecondition), "failed_precondition");
  EXPECT_EQ(StatusCodeLabel(absl::StatusCode::kNotFound), "not_found");
  EXPECT_EQ(StatusCodeLabel(absl::StatusCode::kAlreadyExists), "already_exists");
  EXPECT_EQ(StatusCodeLabel(absl::StatusCode::kInternal), "other");
  EXPECT_EQ(StatusCodeLabel(absl::StatusCode::kUnauthenticated), "other");
}

}  // namespace
}  // namespace mmi
