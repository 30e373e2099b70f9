// StateLoader: the warm load after a restart and the keys decided while it runs.
#include "services/dispatcher/apps/state_loader.h"

#include <gtest/gtest.h>

#include "libs/cloudevents/manifest_bundle.h"
#include "libs/cloudevents/resource_id.h"
#include "libs/common/log.h"
#include "libs/common/testing/log_capture.h"
#include "libs/transport/testing/metric_value.h"
#include "services/dispatcher/apps/testing/pipeline_fixture.h"
#include "services/dispatcher/apps/testing/reconciler_fixture.h"

// In the fixture's namespace: its helpers need no using-declarations here.
namespace mmi::dispatcher::testing {
namespace {

using nlohmann::json;
using transport::testing::MetricValue;
using StateLoaderTest = PipelineTest;

TEST_F(StateLoaderTest, ARestartWithAWarmStoreRepublishesNothingUnchanged) {
  ASSERT_NO_FATAL_FAILURE(DispatchedThenStopped({"a", "b", "c"}));

  // Restart: same store, same hub; one Application changed while we were down.
  json changed = hub_.Get(ApplicationsRef("argocd"), "b").value();
  changed["spec"]["source"]["targetRevision"] = "v2";
  ASSERT_TRUE(hub_.Update(ApplicationsRef("argocd"), changed, {}).ok());
  apps_.Set(hub_.Get(ApplicationsRef("argocd"), "b").value());
  Process& p = Start();
  ASSERT_EQ(p.publisher.published().size(), 1U);
  EXPECT_EQ(p.publisher.accepted()[0].type, cloudevents::kSpecUpdateRequestType);
  EXPECT_EQ(p.publisher.accepted()[0].ResourceVersion().value(), 2);
  EXPECT_EQ(p.reconciler.TrackedForTest(), 3U);
  EXPECT_EQ(MetricValue(p.registry, "mmi_dispatcher_decisions_total", {{"decision", "unchanged"}}),
            2);
}

TEST_F(StateLoaderTest, ARestartDispatchesCachedChangesBeforeTheApplicationListIsComplete) {
  ASSERT_NO_FATAL_FAILURE(DispatchedThenStopped({"a", "b", "gone"}));
  ASSERT_TRUE(hub_.Delete(ApplicationsRef("argocd"), "gone", {}).ok());  // while we were down

  // Restarted; the list is still read. The watch delivers a change of b and a new c.
  const kube::ObjectPtr a = apps_.Get("argocd", "a");
  for (const char* name : {"a", "b", "gone"}) {
    apps_.Remove(std::string("argocd/") + name);
  }
  apps_.SetSynced(false);
  Process& p = Start();
  json b = hub_.Get(ApplicationsRef("argocd"), "b").value();
  b["spec"]["source"]["targetRevision"] = "v2";
  PutApp(b);
  PutApp(PullApp("argocd", "c", "cluster1"));
  p.RunAll();
  ASSERT_EQ(p.publisher.accepted().size(), 2U);
  EXPECT_EQ(p.publisher.accepted()[0].type, cloudevents::kSpecUpdateRequestType);
  EXPECT_EQ(p.publisher.accepted()[0].ResourceVersion().value(), 2);
  EXPECT_EQ(p.publisher.accepted()[1].type, cloudevents::kSpecCreateRequestType);
  EXPECT_EQ(p.reconciler.ResourceForTest(IdOf("cluster1", "argocd", "gone"))->state,
            store::DeletionState::kLive);
  EXPECT_GE(MetricValue(p.registry, "mmi_dispatcher_deferred_until_synced_total", {}), 2);

  // The list completes: a is unchanged, gone is gone (its delete goes out now).
  apps_.Set(*a);
  apps_.SetSynced(true);
  clock_.Advance(std::chrono::seconds(1));
  p.RunAll();
  ASSERT_EQ(p.publisher.accepted().size(), 3U);
  EXPECT_EQ(p.publisher.accepted()[2].type, cloudevents::kSpecDeleteRequestType);
  EXPECT_EQ(p.publisher.accepted()[2].ResourceId().value(), IdOf("cluster1", "argocd", "gone"));
  EXPECT_EQ(p.reconciler.ResourceForTest(IdOf("cluster1", "argocd", "a"))->state,
            store::DeletionState::kLive);
}

TEST_F(StateLoaderTest, ChangesDuringTheWarmLoadAreDecidedFromTheirOwnRowsAfterTheirOlderEvents) {
  PutApp(PullApp("argocd", "a", "cluster1"));
  PutApp(PullApp("argocd", "b", "cluster1"));
  {
    Process& p = Start();
    ASSERT_EQ(p.publisher.accepted().size(), 2U);
    // b changes to v2; the broker refuses the update and the process stops before its retry.
    p.publisher.FailNext(absl::UnavailableError("broker away"));
    json b = hub_.Get(ApplicationsRef("argocd"), "b").value();
    b["spec"]["source"]["targetRevision"] = "v2";
    PutApp(b);
    p.RunAll();
    ASSERT_EQ(p.publisher.accepted().size(), 2U);
  }
  process_.reset();
  ASSERT_EQ(store_.PendingOutbox(0, 10)->size(), 1U);

  // Restarted; the warm load does not finish. The watch delivers b at v3 and a new c.
  store_.HoldWarmLoadForTest(true);
  Process& p = Start();
  json b = hub_.Get(ApplicationsRef("argocd"), "b").value();
  b["spec"]["source"]["targetRevision"] = "v3";
  PutApp(b);
  p.reconciler.Enqueue("argocd/b", /*urgent=*/true);
  PutApp(PullApp("argocd", "c", "cluster1"));
  p.reconciler.Enqueue("argocd/c", /*urgent=*/true);
  p.RunAll();
  EXPECT_FALSE(p.reconciler.loaded());
  const auto accepted = p.publisher.accepted();
  ASSERT_EQ(accepted.size(), 3U);
  EXPECT_EQ(accepted[0].ResourceId().value(), IdOf("cluster1", "argocd", "b"));
  EXPECT_EQ(accepted[0].ResourceVersion().value(), 2) << "the older event goes out first";
  const auto later = accepted[1].ResourceId().value_or("") == IdOf("cluster1", "argocd", "b")
                         ? std::pair(accepted[1], accepted[2])
                         : std::pair(accepted[2], accepted[1]);
  EXPECT_EQ(later.first.type, cloudevents::kSpecUpdateRequestType);
  EXPECT_EQ(later.first.ResourceVersion().value(), 3);
  EXPECT_EQ(later.second.type, cloudevents::kSpecCreateRequestType);
  EXPECT_EQ(later.second.ResourceId().value(), IdOf("cluster1", "argocd", "c"));
  EXPECT_EQ(MetricValue(p.registry, "mmi_dispatcher_decided_before_load_total", {}), 2);
  EXPECT_FALSE(p.reconciler.ResourceForTest(IdOf("cluster1", "argocd", "a")).has_value())
      << "a did not change: it waits for the warm load";

  // The load completes: a is unchanged; b and c are not sent again nor set back.
  store_.HoldWarmLoadForTest(false);
  clock_.Advance(std::chrono::minutes(1));
  p.RunAll();
  EXPECT_TRUE(p.reconciler.loaded());
  EXPECT_EQ(p.publisher.accepted().size(), 3U);
  EXPECT_EQ(p.reconciler.TrackedForTest(), 3U);
  const auto b_state = p.reconciler.ResourceForTest(IdOf("cluster1", "argocd", "b"));
  ASSERT_TRUE(b_state.has_value());
  EXPECT_EQ(b_state->version, 3);
  EXPECT_EQ(b_state->unpublished, 0);
  EXPECT_EQ(p.reconciler.ResourceForTest(IdOf("cluster1", "argocd", "c"))->unpublished, 0);
  EXPECT_TRUE(store_.PendingOutbox(0, 10)->empty());
}

TEST_F(StateLoaderTest, DuringTheWarmLoadASecondApplicationForTheSameWorkIsRefused) {
  PutApp(PullApp("team-a", "app", "cluster1"));
  {
    Process& p = Start();
    ASSERT_EQ(p.publisher.accepted().size(), 1U);
  }
  process_.reset();

  store_.HoldWarmLoadForTest(true);
  Process& p = Start();
  PutApp(PullApp("team", "a-app", "cluster1"));
  p.reconciler.Enqueue("team/a-app", /*urgent=*/true);
  p.RunAll();
  EXPECT_TRUE(p.publisher.published().empty());
  EXPECT_EQ(p.reconciler.ResourceForTest(IdOf("cluster1", "team", "a-app"))->key, "team-a/app");

  store_.HoldWarmLoadForTest(false);
  clock_.Advance(std::chrono::minutes(1));
  p.RunAll();
  EXPECT_TRUE(p.reconciler.loaded());
  EXPECT_TRUE(p.publisher.published().empty());
  EXPECT_EQ(p.reconciler.ResourceForTest(IdOf("cluster1", "team", "a-app"))->key, "team-a/app");
}

TEST_F(StateLoaderTest, DuringTheWarmLoadAnAbsentApplicationIsNotDeleted) {
  ASSERT_NO_FATAL_FAILURE(DispatchedThenStopped({"a"}));
  const kube::ObjectPtr a = apps_.Get("argocd", "a");
  apps_.Remove("argocd/a");
  apps_.SetSynced(false);
  store_.HoldWarmLoadForTest(true);
  Process& p = Start();
  p.reconciler.Enqueue("argocd/a", /*urgent=*/true);
  p.RunAll();
  EXPECT_TRUE(p.publisher.published().empty());
  EXPECT_EQ(MetricValue(p.registry, "mmi_dispatcher_decided_before_load_total", {}), 0);

  // Load and list complete, the Application still there: nothing to send.
  store_.HoldWarmLoadForTest(false);
  apps_.Set(*a);
  apps_.SetSynced(true);
  clock_.Advance(std::chrono::minutes(1));
  p.RunAll();
  EXPECT_TRUE(p.publisher.published().empty());
  EXPECT_EQ(p.reconciler.ResourceForTest(IdOf("cluster1", "argocd", "a"))->state,
            store::DeletionState::kLive);
}

}  // namespace
}  // namespace mmi::dispatcher::testing
