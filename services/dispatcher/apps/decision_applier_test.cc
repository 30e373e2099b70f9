// What DecisionApplier carries out for each decision, through the pipeline on fakes.
#include "services/dispatcher/apps/decision_applier.h"

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
using DecisionApplierTest = PipelineTest;

TEST_F(DecisionApplierTest, CreatesOnceAndUpdatesOnlyWhenThePayloadChanges) {
  PutApp(PullApp("argocd", "guestbook", "cluster1"));
  Process& p = Start();
  auto published = p.publisher.accepted();
  ASSERT_EQ(published.size(), 1U);
  const auto& create = published[0];
  EXPECT_EQ(create.type, cloudevents::kSpecCreateRequestType);
  EXPECT_EQ(create.ClusterName().value(), "cluster1");
  EXPECT_EQ(create.ResourceId().value(), IdOf("cluster1", "argocd", "guestbook"));
  EXPECT_EQ(create.ResourceVersion().value(), 1);
  auto bundle = cloudevents::ManifestBundleOf(create);
  ASSERT_TRUE(bundle.ok()) << bundle.status();
  EXPECT_EQ(bundle->manifests.at(0)["spec"]["destination"]["server"],
            "https://kubernetes.default.svc");
  EXPECT_EQ(MetricValue(p.registry, "mmi_dispatcher_decisions_total", {{"decision", "create"}}), 1);

  // Status-only write (bumps resourceVersion and generation): nothing is sent.
  json app = hub_.Get(ApplicationsRef("argocd"), "guestbook").value();
  app["status"] = {{"health", {{"status", "Healthy"}}}};
  ASSERT_TRUE(hub_.Update(ApplicationsRef("argocd"), app, {}).ok());
  Sync("argocd", "guestbook");
  p.RunAll();
  EXPECT_EQ(p.publisher.accepted().size(), 1U);
  EXPECT_EQ(MetricValue(p.registry, "mmi_dispatcher_decisions_total", {{"decision", "unchanged"}}),
            1);

  // Spec change: exactly one update with the next version.
  app = hub_.Get(ApplicationsRef("argocd"), "guestbook").value();
  app["spec"]["source"]["targetRevision"] = "v2";
  ASSERT_TRUE(hub_.Update(ApplicationsRef("argocd"), app, {}).ok());
  Sync("argocd", "guestbook");
  p.RunAll();
  published = p.publisher.accepted();
  ASSERT_EQ(published.size(), 2U);
  EXPECT_EQ(published[1].type, cloudevents::kSpecUpdateRequestType);
  EXPECT_EQ(published[1].ResourceVersion().value(), 2);
  EXPECT_EQ(cloudevents::ManifestBundleOf(published[1])
                ->manifests.at(0)["spec"]["source"]["targetRevision"],
            "v2");

  // The store holds the state and the outbox is empty.
  auto row = store_.GetResource(IdOf("cluster1", "argocd", "guestbook"));
  ASSERT_TRUE(row.ok() && row->has_value());
  EXPECT_EQ((*row)->version, 2);
  EXPECT_TRUE((*row)->last_published_at.has_value());
  EXPECT_TRUE(store_.PendingOutbox(0, 10)->empty());
}

TEST_F(DecisionApplierTest, MaestroModeSendsVersionZero) {
  PutApp(PullApp("argocd", "guestbook", "cluster1"));
  ReconcilerSettings settings;
  settings.version_mode = VersionMode::kMaestro;
  Process& p = Start(settings);
  ASSERT_EQ(p.publisher.accepted().size(), 1U);
  EXPECT_EQ(p.publisher.accepted()[0].ResourceVersion().value(), 0);
}

TEST_F(DecisionApplierTest, AVanishedApplicationIsDeletedOnTheSpoke) {
  json app = PullApp("argocd", "guestbook", "cluster1");
  app["metadata"].erase("finalizers");
  PutApp(app);
  Process& p = Start();
  ASSERT_TRUE(hub_.Delete(ApplicationsRef("argocd"), "guestbook", {}).ok());
  Sync("argocd", "guestbook");
  p.RunAll();
  ASSERT_EQ(p.publisher.accepted().size(), 2U);
  EXPECT_EQ(p.publisher.accepted()[1].type, cloudevents::kSpecDeleteRequestType);
  const std::string id = IdOf("cluster1", "argocd", "guestbook");
  p.reconciler.OnDeletionConfirmed(id);
  p.RunAll();
  EXPECT_FALSE(store_.GetResource(id)->has_value());
}

TEST_F(DecisionApplierTest, SkipsLocalClusterByNameOrLabel) {
  clusters_.OnAdd(std::make_shared<const json>(ManagedCluster("local-cluster")), false);
  clusters_.OnAdd(std::make_shared<const json>(ManagedCluster("hub-self", true)), false);
  PutApp(PullApp("argocd", "a", "local-cluster"));
  PutApp(PullApp("argocd", "b", "hub-self"));
  PutApp(PullApp("argocd", "c", "cluster1"));
  Process& p = Start();
  ASSERT_EQ(p.publisher.accepted().size(), 1U);
  EXPECT_EQ(p.publisher.accepted()[0].ClusterName().value(), "cluster1");
  EXPECT_EQ(MetricValue(p.registry, "mmi_dispatcher_decisions_total",
                        {{"decision", "skipped_local_cluster"}}),
            2);
}

TEST_F(DecisionApplierTest, AnUnknownClusterIsReportedAndRetriedNotDropped) {
  PutApp(PullApp("argocd", "guestbook", "cluster2"));
  ReconcilerSettings settings;
  settings.unknown_cluster_retry = std::chrono::seconds(30);
  settings.unknown_cluster_event_interval = std::chrono::minutes(10);
  Process& p = Start(settings);
  EXPECT_TRUE(p.publisher.accepted().empty());
  EXPECT_TRUE(p.reconciler.ParkedForTest("argocd/guestbook"));
  EXPECT_EQ(MetricValue(p.registry, "mmi_dispatcher_unknown_cluster_total", {}), 1);
  EXPECT_EQ(MetricValue(p.registry, "mmi_dispatcher_parked_applications", {}), 1);

  auto events = hub_.List({"", "v1", "events", "argocd"}, {});
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->items.size(), 1U);
  const json& ev = events->items[0];
  EXPECT_EQ(ev["reason"], "UnknownManagedCluster");
  EXPECT_EQ(ev["type"], "Warning");
  EXPECT_EQ(ev["involvedObject"]["name"], "guestbook");
  EXPECT_EQ(ev["involvedObject"]["kind"], "Application");

  // The periodic retry reconciles it again (still unknown: no second Event within the interval).
  const size_t lists_before = hub_.CountCalls("CREATE");
  clock_.Advance(std::chrono::seconds(31));
  p.RunAll();
  EXPECT_EQ(
      MetricValue(p.registry, "mmi_dispatcher_decisions_total", {{"decision", "unknown_cluster"}}),
      2);
  EXPECT_EQ(hub_.CountCalls("CREATE"), lists_before);
  EXPECT_TRUE(p.publisher.accepted().empty());

  // The ManagedCluster appears: the parked Application is dispatched.
  clusters_.OnAdd(std::make_shared<const json>(ManagedCluster("cluster2")), false);
  p.RunAll();
  ASSERT_EQ(p.publisher.accepted().size(), 1U);
  EXPECT_EQ(p.publisher.accepted()[0].ClusterName().value(), "cluster2");
  EXPECT_FALSE(p.reconciler.ParkedForTest("argocd/guestbook"));
  EXPECT_EQ(MetricValue(p.registry, "mmi_dispatcher_parked_applications", {}), 0);
}

TEST_F(DecisionApplierTest, ARetargetedApplicationIsDeletedFromTheOldClusterFirst) {
  clusters_.OnAdd(std::make_shared<const json>(ManagedCluster("cluster2")), false);
  PutApp(PullApp("argocd", "guestbook", "cluster1"));
  Process& p = Start();
  ASSERT_EQ(p.publisher.accepted().size(), 1U);
  PutApp(PullApp("argocd", "guestbook", "cluster2"));
  p.RunAll();
  ASSERT_EQ(p.publisher.accepted().size(), 2U);
  EXPECT_EQ(p.publisher.accepted()[1].type, cloudevents::kSpecDeleteRequestType);
  EXPECT_EQ(p.publisher.accepted()[1].ClusterName().value(), "cluster1");
  p.reconciler.OnDeletionConfirmed(IdOf("cluster1", "argocd", "guestbook"));
  p.RunAll();
  ASSERT_EQ(p.publisher.accepted().size(), 3U);
  EXPECT_EQ(p.publisher.accepted()[2].type, cloudevents::kSpecCreateRequestType);
  EXPECT_EQ(p.publisher.accepted()[2].ClusterName().value(), "cluster2");
  // The hub Application kept its finalizer: it is not being deleted.
  EXPECT_EQ(hub_.Get(ApplicationsRef("argocd"), "guestbook").value()["metadata"]["finalizers"],
            json::array({kResourcesFinalizer}));
}

}  // namespace
}  // namespace mmi::dispatcher::testing
