// DeletionFinisher: confirmed deletions finished, finalizers released, through the pipeline.
#include "services/dispatcher/apps/deletion_finisher.h"

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
using DeletionFinisherTest = PipelineTest;

TEST_F(DeletionFinisherTest, ReleasesTheFinalizerOnlyAfterTheAgentConfirmedTheDeletion) {
  PutApp(PullApp("argocd", "guestbook", "cluster1"));
  Process& p = Start();
  ASSERT_EQ(p.publisher.accepted().size(), 1U);
  const std::string id = IdOf("cluster1", "argocd", "guestbook");

  // The hub Application is deleted: it stays (finalizer) with a deletionTimestamp.
  ASSERT_TRUE(hub_.Delete(ApplicationsRef("argocd"), "guestbook", {}).ok());
  const json deleting = Sync("argocd", "guestbook");
  ASSERT_TRUE(deleting["metadata"].contains("deletionTimestamp"));
  p.RunAll();
  auto published = p.publisher.accepted();
  ASSERT_EQ(published.size(), 2U);
  EXPECT_EQ(published[1].type, cloudevents::kSpecDeleteRequestType);
  EXPECT_TRUE(published[1].DeletionTimestamp().ok());
  EXPECT_EQ(published[1].ResourceId().value(), id);
  EXPECT_FALSE(published[1].data.has_value());
  EXPECT_EQ((*store_.GetResource(id))->deletion_state, store::DeletionState::kDeleteRequested);
  // Not confirmed yet: the finalizer is still there, even after more reconciles.
  Sync("argocd", "guestbook");
  p.RunAll();
  auto still = hub_.Get(ApplicationsRef("argocd"), "guestbook");
  ASSERT_TRUE(still.ok());
  EXPECT_EQ((*still)["metadata"]["finalizers"], json::array({kResourcesFinalizer}));
  EXPECT_EQ(p.publisher.accepted().size(), 2U);

  // The status sink records Deleted=True and notifies.
  ASSERT_TRUE(store_.MarkDeletionConfirmed(id).ok());
  p.reconciler.OnDeletionConfirmed(id);
  p.RunAll();
  EXPECT_TRUE(absl::IsNotFound(hub_.Get(ApplicationsRef("argocd"), "guestbook").status()));
  EXPECT_FALSE(store_.GetResource(id)->has_value());
  EXPECT_FALSE(p.reconciler.ResourceForTest(id).has_value());
  EXPECT_EQ(MetricValue(p.registry, "mmi_dispatcher_decisions_total",
                        {{"decision", "finalizer_released"}}),
            1);
}

TEST_F(DeletionFinisherTest, ConfirmedDeletionsFoundAtStartAreFinished) {
  PutApp(PullApp("argocd", "guestbook", "cluster1"));
  const std::string id = IdOf("cluster1", "argocd", "guestbook");
  {
    Process& p = Start();
    ASSERT_TRUE(hub_.Delete(ApplicationsRef("argocd"), "guestbook", {}).ok());
    Sync("argocd", "guestbook");
    p.RunAll();
    ASSERT_EQ(p.publisher.accepted().size(), 2U);
  }
  process_.reset();
  // Confirmed while the dispatcher was down (NOTIFY lost): the warm load sweeps it.
  ASSERT_TRUE(store_.MarkDeletionConfirmed(id).ok());
  Process& p = Start();
  EXPECT_TRUE(absl::IsNotFound(hub_.Get(ApplicationsRef("argocd"), "guestbook").status()));
  EXPECT_FALSE(store_.GetResource(id)->has_value());
  EXPECT_TRUE(p.publisher.accepted().empty());
}

TEST_F(DeletionFinisherTest, AConfirmedDeletionWaitsForTheCacheToReleaseTheFinalizer) {
  PutApp(PullApp("argocd", "guestbook", "cluster1"));
  const std::string id = IdOf("cluster1", "argocd", "guestbook");
  {
    Process& p = Start();
    ASSERT_TRUE(hub_.Delete(ApplicationsRef("argocd"), "guestbook", {}).ok());
    Sync("argocd", "guestbook");
    p.RunAll();
    ASSERT_EQ(p.publisher.accepted().size(), 2U);
  }
  process_.reset();
  ASSERT_TRUE(store_.MarkDeletionConfirmed(id).ok());

  // Restart before the cache listed the (deleting) Application: the confirmation must not be
  // finished yet, or the finalizer would stay on the hub Application.
  const kube::ObjectPtr deleting = apps_.Get("argocd", "guestbook");
  ASSERT_NE(deleting, nullptr);
  apps_.Remove("argocd/guestbook");
  apps_.SetSynced(false);
  Process& p = Start();
  p.reconciler.OnDeletionConfirmed(id);
  clock_.Advance(std::chrono::seconds(1));
  p.RunAll();
  EXPECT_TRUE(store_.GetResource(id)->has_value());
  EXPECT_TRUE(hub_.Get(ApplicationsRef("argocd"), "guestbook").ok());

  apps_.Set(*deleting);
  apps_.SetSynced(true);
  clock_.Advance(std::chrono::seconds(1));
  p.RunAll();
  EXPECT_TRUE(absl::IsNotFound(hub_.Get(ApplicationsRef("argocd"), "guestbook").status()));
  EXPECT_FALSE(store_.GetResource(id)->has_value());
  EXPECT_TRUE(p.publisher.accepted().empty());
}

}  // namespace
}  // namespace mmi::dispatcher::testing
