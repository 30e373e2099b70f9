#include "libs/common/status_macros.h"

#include <gtest/gtest.h>

namespace mmi {
namespace {

absl::StatusOr<int> Half(int x) {
  if (x % 2 != 0) {
    return absl::InvalidArgumentError("odd");
  }
  return x / 2;
}

absl::StatusOr<int> Quarter(int x) {
  ASSIGN_OR_RETURN(int half, Half(x));
  ASSIGN_OR_RETURN(int quarter, Half(half));
  return quarter;
}

absl::Status CheckEven(int x) {
  RETURN_IF_ERROR(Half(x));
  return absl::OkStatus();
}

TEST(StatusMacrosTest, AssignOrReturnPassesValuesThrough) {
  auto q = Quarter(8);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(*q, 2);
}

TEST(StatusMacrosTest, AssignOrReturnPropagatesTheFirstError) {
  auto q = Quarter(6);
  EXPECT_EQ(q.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(q.status().message(), "odd");
}

TEST(StatusMacrosTest, ReturnIfErrorAcceptsStatusOr) {
  EXPECT_TRUE(CheckEven(4).ok());
  EXPECT_EQ(CheckEven(3).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace mmi
