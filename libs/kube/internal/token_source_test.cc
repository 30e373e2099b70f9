#include "libs/kube/internal/token_source.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "libs/common/testing/fake_clock.h"

namespace mmi::kube::internal {
namespace {

class TokenSourceTest : public ::testing::Test {
 protected:
  TokenSourceTest()
      : file_(std::filesystem::path(::testing::TempDir()) /
              absl::StrCat("token_",
                           ::testing::UnitTest::GetInstance()->current_test_info()->name(), "_",
                           getpid())) {}
  ~TokenSourceTest() override { std::filesystem::remove(file_); }
  void WriteToken(const std::string& token) { std::ofstream(file_) << token << "\n"; }

  std::filesystem::path file_;
  mmi::testing::FakeClock clock_;
};

TEST_F(TokenSourceTest, ReturnsTheStaticTokenWhenNoFileIsConfigured) {
  TokenSource source("static", "", clock_, std::chrono::seconds(60));
  EXPECT_EQ(*source.Token(), "static");
  EXPECT_FALSE(source.Invalidate());
  TokenSource none("", "", clock_, std::chrono::seconds(60));
  EXPECT_EQ(*none.Token(), "");
}

TEST_F(TokenSourceTest, ReReadsARotatedFileOnlyAfterTheRefreshPeriod) {
  WriteToken("first");
  TokenSource source("", file_.string(), clock_, std::chrono::seconds(60));
  EXPECT_EQ(*source.Token(), "first");
  WriteToken("second");  // the kubelet rotated the projected token
  clock_.Advance(std::chrono::seconds(59));
  EXPECT_EQ(*source.Token(), "first");
  clock_.Advance(std::chrono::seconds(1));
  EXPECT_EQ(*source.Token(), "second");
}

TEST_F(TokenSourceTest, InvalidateForcesAReReadAfterA401) {
  WriteToken("first");
  TokenSource source("", file_.string(), clock_, std::chrono::seconds(60));
  EXPECT_EQ(*source.Token(), "first");
  WriteToken("second");
  EXPECT_TRUE(source.Invalidate());
  EXPECT_EQ(*source.Token(), "second");
}

TEST_F(TokenSourceTest, KeepsTheLastGoodTokenWhenTheFileDisappears) {
  WriteToken("good");
  TokenSource source("", file_.string(), clock_, std::chrono::seconds(60));
  EXPECT_EQ(*source.Token(), "good");
  std::filesystem::remove(file_);
  clock_.Advance(std::chrono::minutes(5));
  EXPECT_EQ(*source.Token(), "good");
}

TEST_F(TokenSourceTest, FailsUnauthenticatedWhenTheFileWasNeverReadable) {
  TokenSource source("", file_.string() + "-missing", clock_, std::chrono::seconds(60));
  EXPECT_EQ(source.Token().status().code(), absl::StatusCode::kUnauthenticated);
}

}  // namespace
}  // namespace mmi::kube::internal
