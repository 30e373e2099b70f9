#include "services/dispatcher/apps/decision.h"

#include <gtest/gtest.h>

#include "prometheus/registry.h"
#include "services/dispatcher/apps/metrics.h"
#include "services/dispatcher/apps/testing/pipeline_fixture.h"

// In the fixture's namespace: its helpers need no using-declarations here.
namespace mmi::dispatcher::testing {
namespace {

using Action = Decision::Action;
using store::DeletionState;

class DecideTest : public ::testing::Test {
 protected:
  DecideTest() {
    clusters_.OnAdd(std::make_shared<const nlohmann::json>(ManagedCluster("cluster1")), true);
    clusters_.OnAdd(std::make_shared<const nlohmann::json>(ManagedCluster("local-cluster")), true);
    clusters_.OnSynced();
  }

  Decision DecideFor(const nlohmann::json* app, const TrackedResource* tracked) {
    return Decide({.key = "argocd/guestbook",
                   .app = app,
                   .tracked = tracked,
                   .state = &state_,
                   .clusters = &clusters_,
                   .now = now_},
                  settings_);
  }

  // What was recorded for argocd/guestbook on cluster1 with the payload of `app`.
  TrackedResource Recorded(const nlohmann::json& app, DeletionState state) {
    auto dispatch = BuildDispatch(app, settings_.payload);
    EXPECT_TRUE(dispatch.ok()) << dispatch.status();
    TrackedResource t;
    t.identity = {dispatch->resource_id, dispatch->cluster, dispatch->work_name,
                  dispatch->hub_namespace, dispatch->hub_name};
    t.payload_hash = dispatch->payload_hash;
    t.version = 3;
    t.state = state;
    return t;
  }

  prometheus::Registry registry_;
  DispatcherMetrics metrics_{registry_, "fake"};
  DispatchState state_{metrics_.tracked()};
  ManagedClusterTracker clusters_;
  ReconcilerSettings settings_;
  std::chrono::steady_clock::time_point now_{std::chrono::hours(1)};
  nlohmann::json app_ = PullApp("argocd", "guestbook", "cluster1");
};

TEST_F(DecideTest, PublishesVersionOneOfANewApplication) {
  const Decision d = DecideFor(&app_, nullptr);
  EXPECT_EQ(d.action, Action::kPublishSpec);
  EXPECT_TRUE(d.create);
  EXPECT_EQ(d.version, 1);
  EXPECT_TRUE(d.unpark);
}

TEST_F(DecideTest, PublishesTheNextVersionWhenThePayloadChanged) {
  TrackedResource t = Recorded(app_, DeletionState::kLive);
  t.payload_hash = "older";
  const Decision d = DecideFor(&app_, &t);
  EXPECT_EQ(d.action, Action::kPublishSpec);
  EXPECT_FALSE(d.create);
  EXPECT_EQ(d.version, 4);
}

TEST_F(DecideTest, SendsNothingWhenThePayloadIsUnchanged) {
  const TrackedResource t = Recorded(app_, DeletionState::kLive);
  const Decision d = DecideFor(&app_, &t);
  EXPECT_EQ(d.action, Action::kNothing);
  EXPECT_EQ(d.reason, "unchanged");
}

TEST_F(DecideTest, SendsNothingWhenTheHubOnlyLostTheRequestItStripped) {
  nlohmann::json with_operation = app_;
  with_operation["operation"] = {{"sync", {{"revision", "HEAD"}}}};
  TrackedResource t = Recorded(with_operation, DeletionState::kLive);
  t.request_free_hash = BuildDispatch(with_operation, settings_.payload)->request_free_hash;
  const Decision d = DecideFor(&app_, &t);
  EXPECT_EQ(d.action, Action::kAdoptStripped);
  EXPECT_EQ(d.reason, "request_stripped");
  EXPECT_EQ(d.adopted_hash, BuildDispatch(app_, settings_.payload)->payload_hash);
}

TEST_F(DecideTest, PublishesAChangeBesideTheStrippedRequest) {
  nlohmann::json with_operation = app_;
  with_operation["operation"] = {{"sync", {{"revision", "HEAD"}}}};
  TrackedResource t = Recorded(with_operation, DeletionState::kLive);
  t.request_free_hash = BuildDispatch(with_operation, settings_.payload)->request_free_hash;
  nlohmann::json changed = app_;
  changed["spec"]["source"]["targetRevision"] = "v2";
  const Decision d = DecideFor(&changed, &t);
  EXPECT_EQ(d.action, Action::kPublishSpec);
  EXPECT_FALSE(d.dispatch->carries_operation);
}

TEST_F(DecideTest, WaitsWhileAStoreCallForTheResourceIsRunning) {
  TrackedResource t = Recorded(app_, DeletionState::kLive);
  t.busy = true;
  EXPECT_EQ(DecideFor(&app_, &t).action, Action::kWaitWhileBusy);
}

TEST_F(DecideTest, RequestsADeleteWhenTheApplicationVanished) {
  const TrackedResource t = Recorded(app_, DeletionState::kLive);
  const Decision d = DecideFor(nullptr, &t);
  EXPECT_EQ(d.action, Action::kRequestDelete);
  EXPECT_FALSE(d.deletion_time.has_value());
  EXPECT_FALSE(d.resend);
}

TEST_F(DecideTest, WaitsForTheAgentToConfirmARequestedDelete) {
  TrackedResource t = Recorded(app_, DeletionState::kDeleteRequested);
  t.delete_published_at = now_ - settings_.delete_resend_after / 2;
  const Decision d = DecideFor(nullptr, &t);
  EXPECT_EQ(d.action, Action::kNothing);
  EXPECT_EQ(d.reason, "waiting_deletion");
}

TEST_F(DecideTest, SendsTheDeleteAgainOnceItsResendDelayPassed) {
  TrackedResource t = Recorded(app_, DeletionState::kDeleteRequested);
  t.delete_published_at = now_ - settings_.delete_resend_after;
  const Decision d = DecideFor(nullptr, &t);
  EXPECT_EQ(d.action, Action::kRequestDelete);
  EXPECT_TRUE(d.resend);
}

TEST_F(DecideTest, FinishesADeletionTheAgentConfirmed) {
  const TrackedResource t = Recorded(app_, DeletionState::kDeleteConfirmed);
  EXPECT_EQ(DecideFor(nullptr, &t).action, Action::kFinishDeletion);
}

TEST_F(DecideTest, ReleasesTheFinalizerOfADeletedApplicationNeverDispatched) {
  app_["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z";
  EXPECT_EQ(DecideFor(&app_, nullptr).action, Action::kReleaseFinalizer);
}

TEST_F(DecideTest, RetiresTheOldResourceFirstWhenTheApplicationIsRetargeted) {
  const TrackedResource t = Recorded(app_, DeletionState::kLive);
  const nlohmann::json moved = PullApp("argocd", "guestbook", "cluster2");
  const Decision d = DecideFor(&moved, &t);
  EXPECT_EQ(d.action, Action::kRequestDelete);
  EXPECT_TRUE(d.requeue);
}

TEST_F(DecideTest, ParksAnApplicationOfAnUnknownCluster) {
  const nlohmann::json app = PullApp("argocd", "guestbook", "cluster9");
  const Decision d = DecideFor(&app, nullptr);
  EXPECT_EQ(d.action, Action::kPark);
  EXPECT_EQ(d.cluster, "cluster9");
}

TEST_F(DecideTest, SkipsAnApplicationOfTheHubItself) {
  const nlohmann::json app = PullApp("argocd", "guestbook", "local-cluster");
  const Decision d = DecideFor(&app, nullptr);
  EXPECT_EQ(d.action, Action::kNothing);
  EXPECT_EQ(d.reason, "skipped_local_cluster");
}

TEST_F(DecideTest, LeavesAnApplicationThatIsNotPullModelAlone) {
  app_["metadata"]["labels"].clear();
  const Decision d = DecideFor(&app_, nullptr);
  EXPECT_EQ(d.action, Action::kNothing);
  EXPECT_TRUE(d.reason.empty());
}

}  // namespace
}  // namespace mmi::dispatcher::testing
