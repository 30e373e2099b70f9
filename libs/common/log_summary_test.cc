#include "libs/common/log_summary.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "libs/common/testing/fake_clock.h"

namespace mmi::log {
namespace {

using std::chrono::seconds;

class LogSummaryTest : public ::testing::Test {
 protected:
  LogSummaryTest() { SetOutputForTest(&out_); }
  ~LogSummaryTest() override { SetOutputForTest(nullptr); }

  int Lines() const {
    const std::string text = out_.str();
    int lines = 0;
    for (char c : text) {
      lines += c == '\n' ? 1 : 0;
    }
    return lines;
  }

  std::ostringstream out_;
  testing::FakeClock clock_;
  const Logger logger_{"test"};
};

TEST_F(LogSummaryTest, TheFirstOccurrenceIsLoggedAtOnceWithItsDetail) {
  WarnSummary summary(logger_, "bad event", clock_, seconds(30));
  summary.Add("event-1", {{"resource", "r1"}});
  EXPECT_EQ(Lines(), 1);
  EXPECT_NE(out_.str().find("\"resource\":\"r1\""), std::string::npos) << out_.str();
}

TEST_F(LogSummaryTest, AFloodWithinTheIntervalIsOneSummaryLineWithCountAndSample) {
  WarnSummary summary(logger_, "bad event", clock_, seconds(30));
  for (int i = 1; i <= 2000; ++i) {
    summary.Add("event-" + std::to_string(i));
    clock_.Advance(std::chrono::milliseconds(4));  // 2,000 events in 8 s
  }
  EXPECT_EQ(Lines(), 1) << out_.str();
  summary.Flush();
  EXPECT_EQ(Lines(), 1) << "no summary before the interval has passed";
  clock_.Advance(seconds(30));
  summary.Flush();
  EXPECT_EQ(Lines(), 2) << out_.str();
  EXPECT_NE(out_.str().find("\"occurrences\":1999"), std::string::npos) << out_.str();
  EXPECT_NE(out_.str().find("\"sample\":\"event-2000\""), std::string::npos) << out_.str();
  EXPECT_EQ(summary.total(), 2000u);
}

TEST_F(LogSummaryTest, ASteadyFloodGivesOneLinePerInterval) {
  WarnSummary summary(logger_, "bad event", clock_, seconds(30));
  for (int i = 0; i < 3000; ++i) {  // 10 events/s for 300 s
    summary.Add("e");
    clock_.Advance(std::chrono::milliseconds(100));
  }
  EXPECT_GE(Lines(), 9);
  EXPECT_LE(Lines(), 11);
}

TEST_F(LogSummaryTest, AfterAQuietIntervalTheNextOccurrenceIsLoggedAtOnceAgain) {
  WarnSummary summary(logger_, "bad event", clock_, seconds(30));
  summary.Add("a", {{"n", 1}});
  clock_.Advance(seconds(31));
  summary.Add("b", {{"n", 2}});
  EXPECT_EQ(Lines(), 2);
  EXPECT_NE(out_.str().find("\"n\":2"), std::string::npos) << out_.str();
  EXPECT_EQ(out_.str().find("occurrences"), std::string::npos) << "nothing was summed up";
}

}  // namespace
}  // namespace mmi::log
