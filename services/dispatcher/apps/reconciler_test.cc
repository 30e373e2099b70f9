// Reconciler: the key queue, the caches' sync and the loop's turn, through the pipeline.
#include "services/dispatcher/apps/reconciler.h"

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
using ReconcilerTest = PipelineTest;

TEST_F(ReconcilerTest, AReCreatedApplicationWaitsButTheDeleteIsStillSentAgain) {
  Process& p = StartThenDeleteOnTheHub();
  const std::string id = IdOf("cluster1", "argocd", "guestbook");
  // Someone removes the finalizer; the Application is created again under the same name.
  auto released = hub_.Patch(ApplicationsRef("argocd"), "guestbook", kube::PatchType::kMerge,
                             {{"metadata", {{"finalizers", nullptr}}}}, {}, "");
  ASSERT_TRUE(released.ok()) << released.status();
  PutApp(PullApp("argocd", "guestbook", "cluster1"));
  p.RunAll();
  EXPECT_EQ(p.publisher.accepted().size(), 2U) << "the new one waits for the old deletion";

  clock_.Advance(std::chrono::seconds(61));
  p.RunAll();
  const auto published = p.publisher.accepted();
  ASSERT_EQ(published.size(), 3U);
  EXPECT_EQ(published[2].type, cloudevents::kSpecDeleteRequestType);

  ASSERT_TRUE(store_.MarkDeletionConfirmed(id).ok());
  p.reconciler.OnDeletionConfirmed(id);
  p.RunAll();
  const auto after = p.publisher.accepted();
  ASSERT_EQ(after.size(), 4U) << "then the re-created Application is dispatched afresh";
  EXPECT_EQ(after[3].type, cloudevents::kSpecCreateRequestType);
}

TEST_F(ReconcilerTest, ARestartDecidesNoAbsenceBeforeTheApplicationCacheHasSynced) {
  ASSERT_NO_FATAL_FAILURE(DispatchedThenStopped({"a", "b"}));

  // Restart while the Application informer is still listing: the store knows two resources the
  // cache does not hold yet. They have not vanished; no delete may go out.
  const auto listed = apps_.List();  // what the informer will hold once synced
  apps_.Remove("argocd/a");
  apps_.Remove("argocd/b");
  apps_.SetSynced(false);
  Process& p = Start();
  clock_.Advance(std::chrono::seconds(1));
  p.RunAll();
  EXPECT_TRUE(p.publisher.published().empty());
  EXPECT_EQ(p.reconciler.ResourceForTest(IdOf("cluster1", "argocd", "a"))->state,
            store::DeletionState::kLive);

  // The initial list completes (the informer enqueues every listed key): still nothing to send.
  for (const auto& app : listed) {
    apps_.Set(*app);
  }
  apps_.SetSynced(true);
  for (const char* name : {"a", "b"}) {
    p.reconciler.Enqueue(std::string("argocd/") + name);
  }
  clock_.Advance(std::chrono::seconds(1));
  p.RunAll();
  EXPECT_TRUE(p.publisher.published().empty());
  EXPECT_EQ(MetricValue(p.registry, "mmi_dispatcher_decisions_total", {{"decision", "delete"}}), 0);
  // Each twice: the informer's add, and the reconcile of every key the list's end brings (keys
  // were put aside while it was read).
  EXPECT_EQ(MetricValue(p.registry, "mmi_dispatcher_decisions_total", {{"decision", "unchanged"}}),
            4);
}

TEST_F(ReconcilerTest, NothingIsDecidedBeforeTheManagedClusterCacheHasSynced) {
  ManagedClusterTracker unsynced;
  unsynced.OnAdd(std::make_shared<const json>(ManagedCluster("cluster1")), true);
  PutApp(PullApp("argocd", "guestbook", "cluster1"));
  StartOn(unsynced);
  clock_.Advance(std::chrono::seconds(1));
  process_->RunAll();
  EXPECT_TRUE(process_->publisher.published().empty());
  unsynced.OnSynced();
  clock_.Advance(std::chrono::seconds(1));
  process_->RunAll();
  EXPECT_EQ(process_->publisher.accepted().size(), 1U);
}

TEST_F(ReconcilerTest, QueuedChangesGoOutOnceTheClustersSyncedWhileApplicationsAreStillListed) {
  ASSERT_NO_FATAL_FAILURE(DispatchedThenStopped({"b"}));
  ManagedClusterTracker unsynced;
  unsynced.OnAdd(std::make_shared<const json>(ManagedCluster("cluster1")), true);
  apps_.Remove("argocd/b");
  apps_.SetSynced(false);
  StartOn(unsynced);  // the warm load queued argocd/b
  json b = hub_.Get(ApplicationsRef("argocd"), "b").value();
  b["spec"]["source"]["targetRevision"] = "v2";
  PutApp(b);  // the watch's change: its key is queued already
  clock_.Advance(std::chrono::seconds(1));
  process_->RunAll();
  EXPECT_TRUE(process_->publisher.published().empty());
  unsynced.OnSynced();
  clock_.Advance(std::chrono::seconds(1));
  process_->RunAll();
  ASSERT_EQ(process_->publisher.accepted().size(), 1U);
  EXPECT_EQ(process_->publisher.accepted()[0].type, cloudevents::kSpecUpdateRequestType);
  EXPECT_FALSE(apps_.synced());
}

TEST_F(ReconcilerTest, AnUrgentKeyIsDecidedBeforeKeysQueuedByAResync) {
  for (const char* name : {"a", "b", "c"}) {
    PutApp(PullApp("argocd", name, "cluster1"));
  }
  ReconcilerSettings settings;
  settings.batch_size = 1;
  settings.max_inflight_batches = 1;
  Process& p = Start(settings);
  ASSERT_EQ(p.publisher.accepted().size(), 3U);
  for (const char* name : {"a", "b", "c"}) {
    json app = hub_.Get(ApplicationsRef("argocd"), name).value();
    app["spec"]["source"]["targetRevision"] = "v2";
    ASSERT_TRUE(hub_.Update(ApplicationsRef("argocd"), app, {}).ok());
    apps_.Set(hub_.Get(ApplicationsRef("argocd"), name).value());
  }
  p.reconciler.Enqueue("argocd/a");  // a resync's keys
  p.reconciler.Enqueue("argocd/b");
  p.reconciler.Enqueue("argocd/c", /*urgent=*/true);  // the informer's event
  p.RunAll();
  ASSERT_EQ(p.publisher.accepted().size(), 6U);
  EXPECT_EQ(p.publisher.accepted()[3].ResourceId().value(), IdOf("cluster1", "argocd", "c"));
  EXPECT_EQ(p.publisher.accepted()[4].ResourceId().value(), IdOf("cluster1", "argocd", "a"));
  EXPECT_EQ(p.publisher.accepted()[5].ResourceId().value(), IdOf("cluster1", "argocd", "b"));
}

TEST_F(ReconcilerTest, StatusOnlyInformerUpdatesAreFilteredOut) {
  json a = PullApp("argocd", "guestbook", "cluster1");
  a["metadata"]["resourceVersion"] = "1";
  json b = a;
  b["metadata"]["resourceVersion"] = "2";
  b["metadata"]["generation"] = 5;
  b["status"] = {{"sync", {{"status", "Synced"}}}};
  EXPECT_FALSE(DispatchRelevantChange(a, b));
  b["metadata"]["annotations"][kRefreshAnnotation] = "normal";
  EXPECT_TRUE(DispatchRelevantChange(a, b));
}

}  // namespace
}  // namespace mmi::dispatcher::testing
