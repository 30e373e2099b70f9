#include "services/status-sink/writes/hub_writes.h"

#include <gtest/gtest.h>

#include "libs/common/testing/fake_clock.h"
#include "libs/common/testing/inline_executor.h"
#include "libs/kube/testing/fake_kube_client.h"
#include "libs/store/testing/fake_status_store.h"
#include "libs/transport/testing/metric_value.h"

namespace mmi::status_sink {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using transport::testing::MetricValue;

constexpr char kResource[] = "278f3a61-efe5-56de-abba-6aedbfcce272";

AppliedStatusSaverSettings SaverSettings() {
  AppliedStatusSaverSettings settings;
  settings.interval = milliseconds(0);
  return settings;
}

HubWritesSettings WritesSettings() {
  HubWritesSettings settings;
  settings.progressing_before_healthy = ProgressingMode::kNever;
  settings.retry_backoff = {milliseconds(500), milliseconds(60'000), 2.0, 0.0};
  return settings;
}

class HubWritesTest : public ::testing::Test {
 protected:
  HubWritesTest() {
    store::HubAppRef ref;
    ref.resource_id = kResource;
    ref.cluster = "cluster1";
    ref.hub_namespace = "argocd";
    ref.hub_name = "guestbook-cluster1";
    store_.AddResourceForTest(ref);
  }

  // Caches the hub Application of kResource, as the intake's lookup does.
  void LookUp() {
    AwaitingReport item;
    item.report.update.resource_id = kResource;
    item.ack = [] {};
    hub_apps_.Await(std::move(item));
    ASSERT_NE(hub_apps_.Find(kResource), nullptr);
  }
  void CreateHubApplication() {
    json app = {{"apiVersion", "argoproj.io/v1alpha1"},
                {"kind", "Application"},
                {"metadata", {{"name", "guestbook-cluster1"}, {"namespace", "argocd"}}},
                {"spec", {{"project", "default"}}}};
    ASSERT_TRUE(kube_.Create(ApplicationsRef("argocd"), app, {}).ok());
  }
  void Offer(const std::string& health, bool deleted = false,
             std::optional<int32_t> acked_version = std::nullopt) {
    StatusUpdate update;
    update.resource_id = kResource;
    update.deleted = deleted;
    if (!deleted) {
      update.status = {{"health", {{"status", health}}}, {"sync", {{"status", "Synced"}}}};
    }
    update.status_hash = "hash-" + health + (deleted ? "-deleted" : "") +
                         (acked_version ? "-" + std::to_string(*acked_version) : "");
    update.acked_version = acked_version;
    coalescer_.Offer(std::move(update), [this] { ++acked_; });
  }

  testing::FakeClock clock_;
  prometheus::Registry registry_;
  SinkMetrics metrics_{registry_};
  store::testing::FakeStatusStore store_;
  kube::testing::FakeKubeClient kube_;
  testing::InlineExecutor executor_;
  Writer writer_{WriterSettings{}, kube_, executor_, clock_, metrics_};
  Coalescer coalescer_{CoalescerSettings{}, clock_};
  HubApps hub_apps_{HubAppsSettings{},
                    store_,
                    executor_,
                    executor_,
                    clock_,
                    metrics_,
                    [](const store::HubAppRef&, AwaitingReport) {}};
  AppliedStatusSaver saver_{SaverSettings(), store_, executor_, executor_, clock_, metrics_};
  HubWrites writes_{WritesSettings(), coalescer_, hub_apps_, writer_,  saver_, store_,
                    executor_,        executor_,  clock_,    metrics_, nullptr};
  int acked_ = 0;
};

TEST_F(HubWritesTest, PatchesAReadyStatusOntoTheHubAndAcknowledgesOnceSaved) {
  CreateHubApplication();
  LookUp();
  Offer("Healthy");
  writes_.Pump();
  EXPECT_EQ(kube_.CountCalls("PATCH"), 1U);
  EXPECT_EQ(acked_, 1);
  EXPECT_TRUE(store_.AppliedForTest(kResource).has_value());
  EXPECT_EQ(coalescer_.in_flight(), 0U);
}

TEST_F(HubWritesTest, ANewerAcknowledgementAloneIsSavedWithNoHubPatch) {
  CreateHubApplication();
  LookUp();
  Offer("Healthy", false, 1);
  writes_.Pump();
  ASSERT_EQ(kube_.CountCalls("PATCH"), 1U);
  ASSERT_TRUE(store_.AppliedForTest(kResource).has_value());
  EXPECT_EQ(store_.AppliedForTest(kResource)->acked_version, 1);

  // The same status, applied from a republished bundle (dispatch version 2).
  Offer("Healthy", false, 2);
  writes_.Pump();
  EXPECT_EQ(kube_.CountCalls("PATCH"), 1U);
  EXPECT_EQ(store_.AppliedForTest(kResource)->acked_version, 2);
  EXPECT_EQ(store_.AppliedForTest(kResource)->status_hash, "hash-Healthy-2");
  EXPECT_EQ(acked_, 2);
  EXPECT_EQ(coalescer_.in_flight(), 0U);
}

TEST_F(HubWritesTest, AStatusOfAResourceNotLookedUpIsDroppedAndAcknowledged) {
  Offer("Healthy");
  writes_.Pump();
  EXPECT_EQ(kube_.CountCalls("PATCH"), 0U);
  EXPECT_EQ(acked_, 1);
}

TEST_F(HubWritesTest, AMissingHubApplicationIsCountedAndDropped) {
  LookUp();
  Offer("Healthy");
  writes_.Pump();
  EXPECT_EQ(MetricValue(registry_, "mmi_status_updates_total", {{"result", "not_found"}}), 1);
  EXPECT_EQ(acked_, 1);
  EXPECT_FALSE(store_.AppliedForTest(kResource).has_value());
}

TEST_F(HubWritesTest, AThrottledWriteGoesBackToTheCoalescerWithBackoff) {
  CreateHubApplication();
  LookUp();
  kube_.FailNext("PATCH", absl::ResourceExhaustedError("429"));
  Offer("Healthy");
  writes_.Pump();
  EXPECT_EQ(acked_, 0);
  EXPECT_EQ(coalescer_.pending(), 1U);
  writes_.Pump();
  EXPECT_EQ(kube_.CountCalls("PATCH"), 1U) << "not before its retry delay";
  clock_.Advance(milliseconds(500));
  writes_.Pump();
  EXPECT_EQ(kube_.CountCalls("PATCH"), 2U);
  EXPECT_EQ(acked_, 1);
}

TEST_F(HubWritesTest, ADeletedReportOfALiveResourceIsCountedAndDropped) {
  LookUp();
  Offer("", /*deleted=*/true);
  writes_.Pump();
  EXPECT_EQ(
      MetricValue(registry_, "mmi_status_events_dropped_total", {{"reason", "deleted_while_live"}}),
      1);
  EXPECT_EQ(acked_, 1);
  EXPECT_NE(hub_apps_.Find(kResource), nullptr) << "the resource stays live";
}

}  // namespace
}  // namespace mmi::status_sink
