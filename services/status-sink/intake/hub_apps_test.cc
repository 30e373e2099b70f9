#include "services/status-sink/intake/hub_apps.h"

#include <gtest/gtest.h>

#include <vector>

#include "libs/common/testing/fake_clock.h"
#include "libs/common/testing/inline_executor.h"
#include "libs/store/testing/fake_status_store.h"
#include "libs/transport/testing/metric_value.h"
#include "services/status-sink/testing/held_executor.h"

namespace mmi::status_sink {
namespace {

using std::chrono::milliseconds;

class HubAppsTest : public ::testing::Test {
 protected:
  HubAppsTest() {
    for (const char* id : {"r1", "r2"}) {
      store::HubAppRef ref;
      ref.resource_id = id;
      ref.cluster = "cluster1";
      ref.hub_namespace = "argocd";
      ref.hub_name = std::string("app-") + id;
      store_.AddResourceForTest(ref);
    }
  }

  AwaitingReport Report(const std::string& resource_id) {
    AwaitingReport item;
    item.report.update.resource_id = resource_id;
    item.report.event_id = "event-" + resource_id;
    item.ack = [this] { ++acked_; };
    return item;
  }

  testing::FakeClock clock_;
  prometheus::Registry registry_;
  SinkMetrics metrics_{registry_};
  store::testing::FakeStatusStore store_;
  HeldExecutor store_executor_;
  testing::InlineExecutor loop_;
  std::vector<std::string> found_;
  HubApps hub_apps_{
      HubAppsSettings{.lookup_batch = 500,
                      .max_awaiting = 3,
                      .retry_backoff = {milliseconds(500), milliseconds(60'000), 2.0, 0.0}},
      store_,
      store_executor_,
      loop_,
      clock_,
      metrics_,
      [this](const store::HubAppRef& ref, AwaitingReport item) {
        found_.push_back(ref.hub_name);
        std::move(item.ack)();
      }};
  int acked_ = 0;
};

TEST_F(HubAppsTest, ReportsWaitDuringALookupAndAreLookedUpInTheNextBatch) {
  hub_apps_.Await(Report("r1"));
  hub_apps_.Await(Report("r2"));
  hub_apps_.Await(Report("r1"));
  EXPECT_EQ(hub_apps_.awaiting(), 3U);
  EXPECT_TRUE(hub_apps_.Full());
  store_executor_.RunAll();
  // The first report's lookup was in flight; the others waited for one more, r1's with it.
  EXPECT_EQ(store_.lookup_calls(), 2);
  EXPECT_EQ(found_, (std::vector<std::string>{"app-r1", "app-r1", "app-r2"}));
  EXPECT_EQ(hub_apps_.awaiting(), 0U);
  ASSERT_NE(hub_apps_.Find("r2"), nullptr);
  EXPECT_EQ(hub_apps_.Find("r2")->hub_name, "app-r2");
  hub_apps_.Forget("r2");
  EXPECT_EQ(hub_apps_.Find("r2"), nullptr);
}

TEST_F(HubAppsTest, AReportOfAnUnknownResourceIsCountedAndAcknowledged) {
  hub_apps_.Await(Report("unknown"));
  store_executor_.RunAll();
  EXPECT_TRUE(found_.empty());
  EXPECT_EQ(acked_, 1);
  EXPECT_EQ(transport::testing::MetricValue(registry_, "mmi_status_events_dropped_total",
                                            {{"reason", "unknown_resource"}}),
            1);
}

TEST_F(HubAppsTest, AFailedLookupIsRetriedAfterItsBackoff) {
  store_.FailWithForTest(absl::UnavailableError("database down"));
  hub_apps_.Await(Report("r1"));
  store_executor_.RunAll();
  EXPECT_EQ(hub_apps_.awaiting(), 1U) << "kept for the retry";
  store_.FailWithForTest(absl::OkStatus());
  hub_apps_.StartLookup();
  store_executor_.RunAll();
  EXPECT_TRUE(found_.empty()) << "not before the retry delay";
  clock_.Advance(milliseconds(500));
  hub_apps_.StartLookup();
  store_executor_.RunAll();
  EXPECT_EQ(found_, (std::vector<std::string>{"app-r1"}));
}

// Manifest delivery: a changed render reads the record again (and the rendered manifests of a
// new payload hash with it); the old record serves until the new one is there.
TEST_F(HubAppsTest, ARefreshReplacesTheRecordAndLoadsTheManifestsOfItsPayload) {
  ManifestPayloads payloads(/*max_payloads=*/8);
  ManifestStatuses manifests(payloads, clock_);
  std::vector<store::HubAppRef> refreshed;
  HubApps hub_apps(
      HubAppsSettings{}, store_, store_executor_, loop_, clock_, metrics_,
      [](const store::HubAppRef&, AwaitingReport item) { std::move(item.ack)(); }, &manifests,
      [&refreshed](const store::HubAppRef& ref) { refreshed.push_back(ref); });
  hub_apps.Await(Report("r1"));
  store_executor_.RunAll();
  ASSERT_NE(hub_apps.Find("r1"), nullptr);
  EXPECT_FALSE(hub_apps.Find("r1")->manifest.has_value());
  EXPECT_TRUE(refreshed.empty()) << "a report's lookup is no refresh";

  store::HubAppRef rendered = *hub_apps.Find("r1");
  rendered.manifest = store::ManifestRenderRef{.revision = "9f2c4e1",
                                               .source_type = "Directory",
                                               .render_error = "render timed out",
                                               .payload_hash = "render-a",
                                               .version = 1,
                                               .last_published_at = std::nullopt};
  store_.AddResourceForTest(rendered, R"({"manifests":[{"apiVersion":"v1","kind":"ConfigMap",)"
                                      R"("metadata":{"name":"settings"}}]})");
  hub_apps.Refresh("r1");
  EXPECT_FALSE(hub_apps.Find("r1")->manifest.has_value()) << "the old record until the lookup";
  EXPECT_EQ(hub_apps.awaiting(), 0U) << "no report waits";
  store_executor_.RunAll();
  ASSERT_EQ(refreshed.size(), 1U);
  EXPECT_EQ(refreshed[0], rendered);
  EXPECT_EQ(*hub_apps.Find("r1"), rendered);
  auto held = payloads.Find("render-a");
  ASSERT_NE(held, nullptr);
  EXPECT_EQ((*held)[0]["metadata"]["name"], "settings");
  hub_apps.Refresh("gone");  // unknown: nothing to call
  store_executor_.RunAll();
  EXPECT_EQ(refreshed.size(), 1U);
}

}  // namespace
}  // namespace mmi::status_sink
