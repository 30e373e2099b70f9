#include "services/status-sink/intake/intake.h"

#include <gtest/gtest.h>

#include "libs/common/testing/fake_clock.h"
#include "libs/common/testing/inline_executor.h"
#include "libs/store/testing/fake_status_store.h"
#include "libs/transport/testing/fake_publisher.h"
#include "libs/transport/testing/metric_value.h"

namespace mmi::status_sink {
namespace {

using transport::testing::MetricValue;

store::HubAppRef Ref(const std::string& resource_id) {
  store::HubAppRef ref;
  ref.resource_id = resource_id;
  ref.cluster = "cluster1";
  ref.hub_namespace = "argocd";
  ref.hub_name = "app-" + resource_id;
  return ref;
}

StatusResyncSettings ResyncSettings() {
  StatusResyncSettings settings;
  settings.source_id = "mmi-status-sink";
  settings.max_pending = 1;
  return settings;
}

class IntakeTest : public ::testing::Test {
 protected:
  AwaitingReport Report(const std::string& resource_id, const std::string& cluster = "cluster1") {
    AwaitingReport item;
    item.report.update.resource_id = resource_id;
    item.report.update.status = {{"health", {{"status", "Healthy"}}}};
    item.report.update.status_hash = "hash-" + resource_id;
    item.report.event_id = "event-" + resource_id;
    item.report.cluster = cluster;
    item.ack = [this] { ++acked_; };
    return item;
  }
  double Dropped(const std::string& reason) {
    return MetricValue(registry_, "mmi_status_events_dropped_total", {{"reason", reason}});
  }

  testing::FakeClock clock_;
  prometheus::Registry registry_;
  SinkMetrics metrics_{registry_};
  store::testing::FakeStatusStore store_;
  transport::testing::FakePublisher publisher_;
  testing::InlineExecutor executor_;
  Coalescer coalescer_{CoalescerSettings{.max_pending = 1}, clock_};
  StatusResync resync_{ResyncSettings(), publisher_, store_,   executor_,
                       executor_,        clock_,     metrics_, coalescer_};
  HubApps hub_apps_{HubAppsSettings{},
                    store_,
                    executor_,
                    executor_,
                    clock_,
                    metrics_,
                    [this](const store::HubAppRef& ref, AwaitingReport item) {
                      intake_.Admit(ref, std::move(item));
                    }};
  int admitted_ = 0;
  Intake intake_{IntakeSettings{.ignore_resource_health_messages = false, .max_pending = 1},
                 coalescer_,
                 hub_apps_,
                 resync_,
                 clock_,
                 metrics_,
                 [this] { ++admitted_; }};
  int acked_ = 0;
};

TEST_F(IntakeTest, AReportOfItsClusterIsOfferedToTheCoalescer) {
  intake_.Admit(Ref("r1"), Report("r1"));
  EXPECT_EQ(coalescer_.pending(), 1U);
  EXPECT_EQ(admitted_, 1);
  EXPECT_EQ(acked_, 0) << "acknowledged once written";
}

TEST_F(IntakeTest, AReportFromAnotherClusterIsRefusedAndAcknowledged) {
  intake_.Admit(Ref("r1"), Report("r1", "cluster2"));
  EXPECT_EQ(coalescer_.pending(), 0U);
  EXPECT_EQ(Dropped("cluster_mismatch"), 1);
  EXPECT_EQ(acked_, 1);
}

TEST_F(IntakeTest, AReportWithoutRoomIsRememberedAsLost) {
  intake_.Admit(Ref("r1"), Report("r1"));
  intake_.Admit(Ref("r2"), Report("r2"));
  EXPECT_EQ(Dropped("overflow"), 1);
  EXPECT_EQ(resync_.lost(), 1U);
  EXPECT_EQ(acked_, 1);
  EXPECT_TRUE(intake_.HasUnlogged());
  intake_.LogUnlogged();
  EXPECT_FALSE(intake_.HasUnlogged());
}

TEST_F(IntakeTest, AnEventThatIsNoStatusReportIsDroppedAndAcknowledged) {
  cloudevents::Event event;
  event.id = "e1";
  event.type = "io.open-cluster-management.works.v1alpha1.manifestbundles.spec.create_request";
  intake_.Handle(event, [this] { ++acked_; });
  EXPECT_EQ(Dropped("not_status"), 1);
  EXPECT_EQ(acked_, 1);
  EXPECT_EQ(MetricValue(registry_, "mmi_status_events_received_total", {}), 1);
}

TEST_F(IntakeTest, AnUnknownResourceWaitsForItsLookup) {
  store_.AddResourceForTest(Ref("r1"));
  StatusReport report = Report("r1").report;
  // Through the lookup: HubApps hands the report back to Admit().
  hub_apps_.Await(AwaitingReport{std::move(report), [this] { ++acked_; }});
  EXPECT_EQ(coalescer_.pending(), 1U);
  EXPECT_NE(hub_apps_.Find("r1"), nullptr);
}

}  // namespace
}  // namespace mmi::status_sink
