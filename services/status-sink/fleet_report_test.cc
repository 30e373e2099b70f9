#include "services/status-sink/fleet_report.h"

#include <gtest/gtest.h>

#include "libs/common/testing/fake_clock.h"
#include "libs/common/testing/inline_executor.h"
#include "libs/store/testing/fake_status_store.h"
#include "libs/transport/testing/metric_value.h"

namespace mmi::status_sink {
namespace {

using std::chrono::milliseconds;

TEST(FleetReportTest, ReadsTheCountsOncePerInterval) {
  testing::FakeClock clock;
  prometheus::Registry registry;
  SinkMetrics metrics(registry);
  store::testing::FakeStatusStore store;
  testing::InlineExecutor executor;
  FleetReport report(milliseconds(30'000), store, executor, executor, clock, metrics);
  // Failing reads are counted per read: the count tells how often the store was asked.
  store.FailWithForTest(absl::UnavailableError("database down"));
  const auto reads = [&] {
    return transport::testing::MetricValue(registry, "mmi_status_store_errors_total",
                                           {{"operation", "counts"}});
  };
  report.Tick(clock.MonotonicNow());
  EXPECT_EQ(reads(), 1);
  clock.Advance(milliseconds(29'000));
  report.Tick(clock.MonotonicNow());
  EXPECT_EQ(reads(), 1);
  clock.Advance(milliseconds(1'000));
  report.Tick(clock.MonotonicNow());
  EXPECT_EQ(reads(), 2);
}

}  // namespace
}  // namespace mmi::status_sink
