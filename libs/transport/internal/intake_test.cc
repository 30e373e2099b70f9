#include "libs/transport/internal/intake.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "libs/common/testing/fake_clock.h"
#include "libs/transport/testing/metric_value.h"

namespace mmi::transport::internal {
namespace {

TEST(IntakeTest, AFloodOfBadMessagesIsCountedEachAndLoggedAsSummaries) {
  std::ostringstream out;
  log::SetOutputForTest(&out);
  mmi::testing::FakeClock clock;
  prometheus::Registry registry;
  TransportMetrics metrics(registry, "mqtt", ClientRole::kSubscriber);
  const log::Logger logger("transport.test");
  IntakeLog intake_log(logger, clock);
  int handled = 0;
  EventHandler handler = [&handled](cloudevents::Event, AckFn ack) {
    ++handled;
    std::move(ack)();
  };
  int acks = 0;
  for (int i = 0; i < 1000; ++i) {
    Intake(
        100, 1024,
        [] { return absl::StatusOr<cloudevents::Event>(absl::InvalidArgumentError("x")); }, metrics,
        intake_log, "sources/s/consumers/c/agentevents", handler, [&acks] { ++acks; });
    Intake(
        4096, 1024, [] { return absl::StatusOr<cloudevents::Event>(cloudevents::Event{}); },
        metrics, intake_log, "sources/s/consumers/c/agentevents", handler, [&acks] { ++acks; });
    clock.Advance(std::chrono::milliseconds(10));
  }
  clock.Advance(std::chrono::seconds(30));
  intake_log.malformed.Flush();
  intake_log.oversize.Flush();
  log::SetOutputForTest(nullptr);

  EXPECT_EQ(handled, 0);
  EXPECT_EQ(acks, 2000) << "every rejected message is acknowledged";
  EXPECT_EQ(testing::MetricValue(registry, "mmi_transport_messages_rejected_total",
                                 {{"reason", "malformed"}}),
            1000);
  EXPECT_EQ(testing::MetricValue(registry, "mmi_transport_messages_rejected_total",
                                 {{"reason", "oversize"}}),
            1000);
  const std::string text = out.str();
  int lines = 0;
  for (char c : text) {
    lines += c == '\n' ? 1 : 0;
  }
  EXPECT_EQ(lines, 4) << "the first of each kind at once, then one summary each:\n" << text;
  EXPECT_NE(text.find("\"occurrences\":999"), std::string::npos) << text;
}

}  // namespace
}  // namespace mmi::transport::internal
