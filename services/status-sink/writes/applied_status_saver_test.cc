#include "services/status-sink/writes/applied_status_saver.h"

#include <gtest/gtest.h>

#include "libs/common/testing/fake_clock.h"
#include "libs/common/testing/inline_executor.h"
#include "libs/store/testing/fake_status_store.h"
#include "libs/transport/testing/metric_value.h"

namespace mmi::status_sink {
namespace {

using std::chrono::milliseconds;

class AppliedStatusSaverTest : public ::testing::Test {
 protected:
  void Add(const std::string& resource_id) {
    store::AppliedStatus row;
    row.resource_id = resource_id;
    row.status_hash = "hash-" + resource_id;
    std::vector<Ack> acks;
    acks.emplace_back([this] { ++acked_; });
    saver_.Add(std::move(row), std::move(acks));
  }

  testing::FakeClock clock_;
  prometheus::Registry registry_;
  SinkMetrics metrics_{registry_};
  store::testing::FakeStatusStore store_;
  testing::InlineExecutor executor_;
  AppliedStatusSaver saver_{
      AppliedStatusSaverSettings{
          .batch = 2,
          .interval = milliseconds(200),
          .retry_backoff = {milliseconds(500), milliseconds(60'000), 2.0, 0.0}},
      store_,
      executor_,
      executor_,
      clock_,
      metrics_};
  int acked_ = 0;
};

TEST_F(AppliedStatusSaverTest, SavesAFullBatchAndOnlyThenAcknowledges) {
  Add("r1");
  saver_.Flush();
  EXPECT_EQ(store_.save_calls(), 0) << "a partial batch waits for the interval";
  EXPECT_EQ(acked_, 0);
  Add("r2");
  saver_.Flush();
  EXPECT_EQ(store_.save_calls(), 1);
  EXPECT_EQ(acked_, 2);
  EXPECT_TRUE(store_.AppliedForTest("r1").has_value());
  EXPECT_TRUE(saver_.Idle());
}

TEST_F(AppliedStatusSaverTest, SavesAPartialBatchOnceTheIntervalPassed) {
  Add("r1");
  clock_.Advance(milliseconds(200));
  saver_.Flush();
  EXPECT_EQ(store_.save_calls(), 1);
  EXPECT_EQ(acked_, 1);
}

TEST_F(AppliedStatusSaverTest, AFailedSaveIsRetriedAfterItsBackoffAndAcknowledgesOnlyThen) {
  store_.FailWithForTest(absl::UnavailableError("database down"));
  Add("r1");
  Add("r2");
  saver_.Flush();
  EXPECT_EQ(acked_, 0);
  EXPECT_EQ(saver_.queued(), 2U) << "kept, in order";
  EXPECT_EQ(transport::testing::MetricValue(registry_, "mmi_status_store_errors_total",
                                            {{"operation", "save"}}),
            1);
  store_.FailWithForTest(absl::OkStatus());
  saver_.Flush();
  EXPECT_EQ(acked_, 0) << "waits for the retry delay";
  clock_.Advance(milliseconds(500));
  saver_.Flush();
  EXPECT_EQ(acked_, 2);
}

TEST_F(AppliedStatusSaverTest, OnceDrainingEveryFlushSavesAtOnce) {
  Add("r1");
  saver_.Drain();
  EXPECT_EQ(acked_, 1);
  Add("r2");
  saver_.Flush();
  EXPECT_EQ(acked_, 2);
}

}  // namespace
}  // namespace mmi::status_sink
