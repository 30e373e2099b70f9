#include "libs/common/config.h"

#include <gtest/gtest.h>

namespace mmi::config {
namespace {

using std::chrono::milliseconds;

TEST(ParseDurationTest, AcceptsGoStyleDurations) {
  EXPECT_EQ(*ParseDuration("0"), milliseconds(0));
  EXPECT_EQ(*ParseDuration("250ms"), milliseconds(250));
  EXPECT_EQ(*ParseDuration("10s"), milliseconds(10'000));
  EXPECT_EQ(*ParseDuration("5m"), milliseconds(300'000));
  EXPECT_EQ(*ParseDuration("1h30m"), milliseconds(5'400'000));
  EXPECT_EQ(*ParseDuration("1.5s"), milliseconds(1'500));
}

TEST(ParseDurationTest, RejectsMalformedInputWithAClearError) {
  for (const char* bad : {"", "10", "ten s", "5x", "-5s", "s", "1e400h"}) {
    auto d = ParseDuration(bad);
    EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_NE(ParseDuration("5x").status().message().find("unknown unit"), std::string::npos);
}

TEST(ParseBoolTest, AcceptsCommonSpellings) {
  EXPECT_TRUE(*ParseBool("TRUE"));
  EXPECT_FALSE(*ParseBool("no"));
  EXPECT_EQ(ParseBool("maybe").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ReadFileTest, ReportsMissingFilesAsNotFound) {
  EXPECT_EQ(ReadFile("/nonexistent/mmi").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace mmi::config
