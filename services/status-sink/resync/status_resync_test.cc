#include "services/status-sink/resync/status_resync.h"

#include <gtest/gtest.h>

#include <set>

#include "libs/cloudevents/maestro_events.h"
#include "libs/common/testing/fake_clock.h"
#include "libs/common/testing/inline_executor.h"
#include "libs/store/testing/fake_status_store.h"
#include "libs/transport/testing/fake_publisher.h"
#include "libs/transport/testing/metric_value.h"

namespace mmi::status_sink {
namespace {

using std::chrono::milliseconds;

StatusResyncSettings Settings() {
  StatusResyncSettings settings;
  settings.source_id = "mmi-status-sink";
  settings.min_interval = milliseconds(30'000);
  settings.lost.max_lost = 10;
  return settings;
}

class StatusResyncTest : public ::testing::Test {
 protected:
  StatusResyncTest() {
    for (const auto& [id, cluster] : {std::pair{"r1", "cluster1"}, std::pair{"r2", "cluster2"}}) {
      store::HubAppRef ref;
      ref.resource_id = id;
      ref.cluster = cluster;
      store_.AddResourceForTest(ref);
    }
    EXPECT_TRUE(publisher_.Start().ok());
  }

  void Tick() { resync_.Tick(clock_.MonotonicNow(), true, true, 0); }
  // The clusters and resource ids listed by the requests published so far.
  std::set<std::string> Listed() const {
    std::set<std::string> out;
    for (const auto& request : publisher_.published()) {
      EXPECT_EQ(request.type, cloudevents::kStatusResyncRequestType);
      auto listed = cloudevents::DecodeResourceStatusHashList(request.data.value_or(""));
      EXPECT_TRUE(listed.ok()) << listed.status();
      for (const auto& entry : listed->status_hashes) {
        out.insert(entry.resource_id);
      }
    }
    return out;
  }

  testing::FakeClock clock_;
  prometheus::Registry registry_;
  SinkMetrics metrics_{registry_};
  store::testing::FakeStatusStore store_;
  transport::testing::FakePublisher publisher_;
  testing::InlineExecutor executor_;
  Coalescer coalescer_{CoalescerSettings{}, clock_};
  StatusResync resync_{Settings(), publisher_, store_,   executor_,
                       executor_,  clock_,     metrics_, coalescer_};
};

TEST_F(StatusResyncTest, ASubscriptionAsksEveryClusterForEveryResource) {
  resync_.AskAfterSubscribe();
  Tick();
  EXPECT_EQ(publisher_.published().size(), 2U) << "one request per cluster";
  EXPECT_EQ(Listed(), (std::set<std::string>{"r1", "r2"}));
  Tick();
  EXPECT_EQ(publisher_.published().size(), 2U) << "asked once";
}

TEST_F(StatusResyncTest, AsksWithinTheMinimumIntervalAreServedByOneLaterResync) {
  resync_.AskAfterSubscribe();
  Tick();
  resync_.AskAfterSubscribe();
  resync_.AskAfterLoss();
  Tick();
  EXPECT_EQ(publisher_.published().size(), 2U);
  EXPECT_EQ(transport::testing::MetricValue(registry_, "mmi_status_resync_suppressed_total", {}),
            1);
  clock_.Advance(milliseconds(30'000));
  Tick();
  EXPECT_EQ(publisher_.published().size(), 4U);
}

TEST_F(StatusResyncTest, ALostReportIsAskedForAlone) {
  resync_.RememberLost("r2", "cluster2");
  EXPECT_EQ(resync_.lost(), 1U);
  Tick();
  ASSERT_EQ(publisher_.published().size(), 1U);
  EXPECT_EQ(Listed(), (std::set<std::string>{"r2"}));
  EXPECT_EQ(resync_.asked(), 1U);
  resync_.ReportArrived("r2", /*overflowed=*/false);
  EXPECT_EQ(resync_.asked(), 0U);
  EXPECT_EQ(resync_.lost(), 0U);
}

TEST_F(StatusResyncTest, NothingIsRequestedWhileDrainingOrWhileTheIntakeIsFull) {
  resync_.AskAfterSubscribe();
  resync_.Tick(clock_.MonotonicNow(), /*may_request=*/false, true, 0);
  resync_.Tick(clock_.MonotonicNow(), true, /*intake_has_room=*/false, 0);
  EXPECT_TRUE(publisher_.published().empty());
}

}  // namespace
}  // namespace mmi::status_sink
