#include "services/status-sink/intake/intake.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "libs/cloudevents/event.h"
#include "libs/common/testing/fake_clock.h"
#include "libs/common/testing/inline_executor.h"
#include "libs/store/testing/fake_status_store.h"
#include "libs/transport/testing/fake_publisher.h"
#include "libs/transport/testing/metric_value.h"
#include "nlohmann/json.hpp"

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

// A status event of `resource_id` from cluster1 whose Application reports Healthy and the
// `dispatchVersion` feedback value `version` (a FieldValue).
cloudevents::Event StatusEvent(const std::string& resource_id, const nlohmann::json& version) {
  const nlohmann::json status = {{"health", {{"status", "Healthy"}}}};
  const nlohmann::json data = {
      {"resourceStatus",
       {{{"resourceMeta", {{"group", "argoproj.io"}, {"kind", "Application"}}},
         {"statusFeedback",
          {{"values",
            {{{"name", "status"},
              {"fieldValue", {{"type", "JsonRaw"}, {"jsonRaw", status.dump()}}}},
             {{"name", "dispatchVersion"}, {"fieldValue", version}}}}}}}}}};
  cloudevents::Event event;
  event.id = "event-" + resource_id;
  event.source = "cluster1-work-agent";
  event.type = std::string(cloudevents::kStatusUpdateRequestType);
  event.data_content_type = "application/json";
  event.SetString(cloudevents::kExtClusterName, "cluster1");
  event.SetString(cloudevents::kExtResourceId, resource_id);
  event.SetString(cloudevents::kExtStatusHash, "hash-" + resource_id);
  event.data = data.dump();
  return event;
}

TEST_F(IntakeTest, AReportWhoseDispatchVersionIsNoVersionIsUsedWithoutItsAcknowledgement) {
  struct Case {
    std::string resource_id;
    nlohmann::json version;
    std::optional<int32_t> acked_version;  // what the write carries
    double malformed_acks;                 // the counter after this event
  };
  const std::vector<Case> cases = {
      {"r1", {{"type", "String"}, {"string", "7"}}, 7, 0},
      {"r2", {{"type", "String"}, {"string", "seven"}}, std::nullopt, 1},
      {"r3", {{"type", "Boolean"}, {"boolean", true}}, std::nullopt, 2},
      {"r4", {{"type", "Integer"}, {"integer", 8}}, 8, 2},
  };
  // Room for every report, so that each one's write shows in TakeReady().
  Coalescer coalescer{CoalescerSettings{.max_pending = 10}, clock_};
  StatusResync resync{ResyncSettings(), publisher_, store_,   executor_,
                      executor_,        clock_,     metrics_, coalescer};
  Intake* intake = nullptr;
  HubApps hub_apps{HubAppsSettings{},
                   store_,
                   executor_,
                   executor_,
                   clock_,
                   metrics_,
                   [&intake](const store::HubAppRef& ref, AwaitingReport item) {
                     intake->Admit(ref, std::move(item));
                   }};
  Intake under_test{IntakeSettings{.ignore_resource_health_messages = false, .max_pending = 10},
                    coalescer,
                    hub_apps,
                    resync,
                    clock_,
                    metrics_,
                    [] {}};
  intake = &under_test;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.resource_id);
    store_.AddResourceForTest(Ref(c.resource_id));
    under_test.Handle(StatusEvent(c.resource_id, c.version), [this] { ++acked_; });
    EXPECT_EQ(MetricValue(registry_, "mmi_status_acks_malformed_total", {}), c.malformed_acks);
  }
  EXPECT_EQ(Dropped("malformed"), 0);
  EXPECT_EQ(acked_, 0) << "acknowledged once written";
  auto ready = coalescer.TakeReady(10);
  ASSERT_EQ(ready.tasks.size(), cases.size()) << "every status is written";
  for (const WriteTask& task : ready.tasks) {
    const auto c = std::ranges::find(cases, task.update.resource_id, &Case::resource_id);
    ASSERT_NE(c, cases.end());
    SCOPED_TRACE(c->resource_id);
    EXPECT_EQ(task.update.status["health"]["status"], "Healthy");
    EXPECT_EQ(task.update.acked_version, c->acked_version);
  }
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
