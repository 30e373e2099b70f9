#include "libs/common/log.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <vector>

namespace mmi::log {
namespace {

class LogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SetOutputForTest(&out_);
    SetServiceName("dispatcher");
    SetMinLevel(Level::kInfo);
  }
  void TearDown() override { SetOutputForTest(nullptr); }

  std::vector<nlohmann::json> Lines() {
    std::vector<nlohmann::json> lines;
    std::istringstream in(out_.str());
    for (std::string line; std::getline(in, line);) {
      lines.push_back(nlohmann::json::parse(line));
    }
    return lines;
  }

  std::ostringstream out_;
};

TEST_F(LogTest, WritesOneJsonObjectPerLineWithTheStandardKeys) {
  Logger logger("transport.mqtt");
  logger.Info("connected", {{"broker", "127.0.0.1:1883"}, {"attempt", 3}, {"tls", true}});
  auto lines = Lines();
  ASSERT_EQ(lines.size(), 1U);
  const auto& j = lines[0];
  EXPECT_EQ(j["level"], "info");
  EXPECT_EQ(j["service"], "dispatcher");
  EXPECT_EQ(j["component"], "transport.mqtt");
  EXPECT_EQ(j["msg"], "connected");
  EXPECT_EQ(j["broker"], "127.0.0.1:1883");
  EXPECT_EQ(j["attempt"], 3);
  EXPECT_EQ(j["tls"], true);
  EXPECT_TRUE(j["ts"].get<std::string>().ends_with("Z"));
}

TEST_F(LogTest, DropsLinesBelowTheMinimumLevel) {
  Logger logger("x");
  logger.Debug("hidden");
  SetMinLevel(Level::kDebug);
  logger.Debug("shown");
  auto lines = Lines();
  ASSERT_EQ(lines.size(), 1U);
  EXPECT_EQ(lines[0]["msg"], "shown");
}

TEST_F(LogTest, HostileNamesCannotBreakTheLine) {
  Logger logger("x");
  const std::string hostile = std::string("a\"b\\c\nd\x01\xff\xc0 e", 13);
  logger.Warn(hostile, {{"cluster", hostile}});
  auto lines = Lines();
  ASSERT_EQ(lines.size(), 1U);
  EXPECT_EQ(lines[0]["cluster"], lines[0]["msg"]);
  EXPECT_EQ(lines[0]["msg"].get<std::string>().substr(0, 8), "a\"b\\c\nd\x01");
}

TEST_F(LogTest, ConcurrentLinesDoNotInterleave) {
  Logger logger("x");
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&logger, t] {
      for (int i = 0; i < 200; ++i) {
        logger.Info("line", {{"thread", t}, {"i", i}});
      }
    });
  }
  for (auto& th : threads) {
    th.join();
  }
  EXPECT_EQ(Lines().size(), 800U);  // every line parses as JSON
}

TEST(LogLevelTest, ParsesKnownLevelsAndRejectsOthers) {
  EXPECT_EQ(*ParseLevel("WARN"), Level::kWarn);
  EXPECT_EQ(*ParseLevel("warning"), Level::kWarn);
  EXPECT_EQ(ParseLevel("loud").status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace mmi::log
