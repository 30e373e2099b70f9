#include "services/dispatcher/apps/reconciler.h"

#include <gtest/gtest.h>

#include <atomic>

#include "libs/cloudevents/manifest_bundle.h"
#include "libs/cloudevents/resource_id.h"
#include "libs/common/log.h"
#include "libs/common/testing/log_capture.h"
#include "libs/transport/testing/metric_value.h"
#include "services/dispatcher/apps/testing/pipeline_fixture.h"

namespace mmi::dispatcher {
namespace {

using nlohmann::json;
using testing::ManagedCluster;
using testing::MapLister;
using testing::Process;
using testing::PullApp;
using transport::testing::MetricValue;

class ReconcilerTest : public ::testing::Test {
 protected:
  ReconcilerTest() {
    clusters_.OnAdd(std::make_shared<const json>(ManagedCluster("cluster1")), true);
    clusters_.OnSynced();
  }

  // Creates (or replaces) the Application on the fake hub and mirrors it into the lister.
  json PutApp(const json& app) {
    const std::string ns = app["metadata"]["namespace"];
    const std::string name = app["metadata"]["name"];
    auto existing = hub_.Get(ApplicationsRef(ns), name);
    absl::StatusOr<json> stored;
    if (existing.ok()) {
      json updated = app;
      updated["metadata"]["resourceVersion"] = (*existing)["metadata"]["resourceVersion"];
      stored = hub_.Update(ApplicationsRef(ns), updated, {});
    } else {
      stored = hub_.Create(ApplicationsRef(ns), app, {});
    }
    EXPECT_TRUE(stored.ok()) << stored.status();
    return Sync(ns, name);
  }

  // Mirrors the hub object into the lister and enqueues its key (the informer's job).
  json Sync(const std::string& ns, const std::string& name) {
    auto current = hub_.Get(ApplicationsRef(ns), name);
    if (current.ok()) {
      apps_.Set(*current);
    } else {
      apps_.Remove(ns + "/" + name);
    }
    if (process_) {
      process_->reconciler.Enqueue(ns + "/" + name);
    }
    return current.ok() ? *current : json();
  }

  Process& Start(ReconcilerSettings settings = {}) {
    process_ = std::make_unique<Process>(clock_, store_, hub_, apps_, clusters_, settings);
    clusters_.SetOnAdded(
        [this](const std::string& cluster) { process_->reconciler.OnClusterAdded(cluster); });
    process_->reconciler.Activate();
    process_->RunAll();
    return *process_;
  }

  // The Applications argocd/<name> on cluster1, dispatched by a process that then stops: a
  // restart follows.
  void DispatchedThenStopped(std::initializer_list<const char*> names) {
    for (const char* name : names) {
      PutApp(PullApp("argocd", name, "cluster1"));
    }
    {
      Process& p = Start();
      ASSERT_EQ(p.publisher.accepted().size(), names.size());
    }
    process_.reset();
  }

  // A process started on `clusters` (cluster1 known, not synced yet), not through Start().
  Process& StartOn(const ManagedClusterTracker& clusters) {
    process_ =
        std::make_unique<Process>(clock_, store_, hub_, apps_, clusters, ReconcilerSettings{});
    process_->reconciler.Activate();
    process_->RunAll();
    return *process_;
  }

  // argocd/guestbook on cluster1, dispatched and then deleted on the hub: its create and delete
  // requests published, the deletion not confirmed.
  Process& StartThenDeleteOnTheHub() {
    PutApp(PullApp("argocd", "guestbook", "cluster1"));
    Process& p = Start();
    EXPECT_TRUE(hub_.Delete(ApplicationsRef("argocd"), "guestbook", {}).ok());
    Sync("argocd", "guestbook");
    p.RunAll();
    EXPECT_EQ(p.publisher.accepted().size(), 2U);
    return p;
  }

  static std::string IdOf(const std::string& cluster, const std::string& ns,
                          const std::string& name) {
    return cloudevents::WorkResourceId("app-work-client", cluster, ns + "-" + name);
  }

  mmi::testing::FakeClock clock_;
  store::testing::FakeDispatchStore store_;
  kube::testing::FakeKubeClient hub_;
  MapLister apps_;
  ManagedClusterTracker clusters_;
  std::unique_ptr<Process> process_;
};

TEST_F(ReconcilerTest, CreatesOnceAndUpdatesOnlyWhenThePayloadChanges) {
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

TEST_F(ReconcilerTest, MaestroModeSendsVersionZero) {
  PutApp(PullApp("argocd", "guestbook", "cluster1"));
  ReconcilerSettings settings;
  settings.version_mode = VersionMode::kMaestro;
  Process& p = Start(settings);
  ASSERT_EQ(p.publisher.accepted().size(), 1U);
  EXPECT_EQ(p.publisher.accepted()[0].ResourceVersion().value(), 0);
}

TEST_F(ReconcilerTest, PropagatesOperationAndRefreshThenRemovesThemFromTheHub) {
  json app = PullApp("argocd", "guestbook", "cluster1");
  app["operation"] = {{"sync", {{"revision", "HEAD"}}}, {"initiatedBy", {{"username", "alice"}}}};
  app["metadata"]["annotations"][kRefreshAnnotation] = "hard";
  PutApp(app);
  Process& p = Start();

  ASSERT_GE(p.publisher.accepted().size(), 1U);
  const json spoke = cloudevents::ManifestBundleOf(p.publisher.accepted()[0])->manifests.at(0);
  EXPECT_EQ(spoke["operation"]["sync"]["revision"], "HEAD");
  EXPECT_EQ(spoke["metadata"]["annotations"][kRefreshAnnotation], "hard");

  // Removed from the hub with one guarded JSON patch.
  const json hub_app = hub_.Get(ApplicationsRef("argocd"), "guestbook").value();
  EXPECT_FALSE(hub_app.contains("operation"));
  EXPECT_FALSE(hub_app["metadata"]["annotations"].contains(kRefreshAnnotation));
  int json_patches = 0;
  for (const auto& call : hub_.Calls()) {
    if (call.verb == "PATCH" && call.detail == "json") {
      ++json_patches;
      EXPECT_EQ(call.body[0]["op"], "test");
      EXPECT_EQ(call.body[0]["path"], "/operation");
    }
  }
  EXPECT_EQ(json_patches, 1);
  EXPECT_EQ(MetricValue(p.registry, "mmi_dispatcher_hub_writes_total",
                        {{"operation", "strip_operation"}, {"result", "ok"}}),
            1);

  // The informer sees the stripped object: one follow-up update without the request, and no
  // second strip.
  Sync("argocd", "guestbook");
  p.RunAll();
  ASSERT_EQ(p.publisher.accepted().size(), 2U);
  const json after = cloudevents::ManifestBundleOf(p.publisher.accepted()[1])->manifests.at(0);
  EXPECT_FALSE(after.contains("operation"));
  EXPECT_EQ(hub_.CountCalls("PATCH"), 1U);
}

TEST_F(ReconcilerTest, ANewerOperationIsNotRemovedByTheStripOfAnOlderOne) {
  PropagatedRequest old_request;
  old_request.operation = json{{"sync", {{"revision", "v1"}}}};
  json app = PullApp("argocd", "guestbook", "cluster1");
  app["operation"] = {{"sync", {{"revision", "v2"}}}};
  ASSERT_TRUE(hub_.Create(ApplicationsRef("argocd"), app, {}).ok());
  const absl::Status s = StripRequest(hub_, "argocd", "guestbook", old_request);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_TRUE(hub_.Get(ApplicationsRef("argocd"), "guestbook")->contains("operation"));
}

TEST_F(ReconcilerTest, ReleasesTheFinalizerOnlyAfterTheAgentConfirmedTheDeletion) {
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

// A Deleted report can be lost (the status sink killed while it held it): an unconfirmed delete
// request goes out again after delete_resend_after, then after twice that, until confirmed.
TEST_F(ReconcilerTest, AnUnconfirmedDeleteRequestIsSentAgainUntilTheAgentConfirms) {
  Process& p = StartThenDeleteOnTheHub();
  const std::string id = IdOf("cluster1", "argocd", "guestbook");

  clock_.Advance(std::chrono::seconds(59));
  p.RunAll();
  EXPECT_EQ(p.publisher.accepted().size(), 2U) << "not before a minute";
  clock_.Advance(std::chrono::seconds(2));
  p.RunAll();
  auto published = p.publisher.accepted();
  ASSERT_EQ(published.size(), 3U);
  EXPECT_EQ(published[2].type, cloudevents::kSpecDeleteRequestType);
  EXPECT_EQ(published[2].ResourceId().value(), id);
  EXPECT_EQ((*store_.GetResource(id))->deletion_state, store::DeletionState::kDeleteRequested);
  EXPECT_EQ(
      MetricValue(p.registry, "mmi_dispatcher_decisions_total", {{"decision", "delete_resent"}}),
      1);

  clock_.Advance(std::chrono::seconds(61));
  p.RunAll();
  EXPECT_EQ(p.publisher.accepted().size(), 3U) << "the second wait is twice as long";
  clock_.Advance(std::chrono::seconds(60));
  p.RunAll();
  EXPECT_EQ(p.publisher.accepted().size(), 4U);

  ASSERT_TRUE(store_.MarkDeletionConfirmed(id).ok());
  p.reconciler.OnDeletionConfirmed(id);
  p.RunAll();
  EXPECT_TRUE(absl::IsNotFound(hub_.Get(ApplicationsRef("argocd"), "guestbook").status()));
  clock_.Advance(std::chrono::minutes(10));
  p.RunAll();
  EXPECT_EQ(p.publisher.accepted().size(), 4U) << "nothing more once confirmed";
}

// The Application is re-created while the old resource's deletion is unconfirmed: the new one
// waits, and the delete request still goes out again until the agent confirms it.
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

TEST_F(ReconcilerTest, ConfirmedDeletionsFoundAtStartAreFinished) {
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

TEST_F(ReconcilerTest, AVanishedApplicationIsDeletedOnTheSpoke) {
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

TEST_F(ReconcilerTest, SkipsLocalClusterByNameOrLabel) {
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

TEST_F(ReconcilerTest, AnUnknownClusterIsReportedAndRetriedNotDropped) {
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

TEST_F(ReconcilerTest, ARestartWithAWarmStoreRepublishesNothingUnchanged) {
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

// Never blind after a restart: while the Application list is still read, the Applications the
// watch delivered (created or changed since) are dispatched at once; only the decisions that
// rest on absence (a resource whose Application vanished while the dispatcher was down) wait
// for the complete list.
TEST_F(ReconcilerTest, ARestartDispatchesCachedChangesBeforeTheApplicationListIsComplete) {
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

// Never blind after a restart, the other half: the dispatch state itself takes a minute to load
// at 300,000 resources. An Application the watch delivers meanwhile is decided from its own rows;
// its event recorded before the restart and never accepted goes out first; the load then installs
// everything else without undoing what was decided.
TEST_F(ReconcilerTest, ChangesDuringTheWarmLoadAreDecidedFromTheirOwnRowsAfterTheirOlderEvents) {
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

// Two keys can name one work ("team-a"/"app" and "team"/"a-app" are both work "team-a-app"):
// while the state loads, the second is refused as it would be after the load, because the row
// the first holds is read by id too.
TEST_F(ReconcilerTest, DuringTheWarmLoadASecondApplicationForTheSameWorkIsRefused) {
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

// While the state loads, a changed key whose Application is not cached (deleted from the hub,
// or not listed yet) decides nothing: absence proves nothing before the list is complete.
TEST_F(ReconcilerTest, DuringTheWarmLoadAnAbsentApplicationIsNotDeleted) {
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

// Nothing is decided before the ManagedCluster list is complete: an Application's cluster may
// only be unlisted yet (it would be parked as unknown).
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

// A restart where the ManagedCluster list completes first: the keys queued by the warm load
// (the watch's changes find theirs queued already) are decided then, not after the Application
// list.
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

// A change the informer saw is decided before keys a list or a resync queued: at 300,000 it
// would otherwise wait behind every unchanged Application.
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

TEST_F(ReconcilerTest, AConfirmedDeletionWaitsForTheCacheToReleaseTheFinalizer) {
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

TEST_F(ReconcilerTest, AFailedRecordIsRetriedAndNothingIsPublishedBeforeIt) {
  PutApp(PullApp("argocd", "guestbook", "cluster1"));
  store_.FailWithForTest(absl::UnavailableError("postgres down"));
  process_ = std::make_unique<Process>(clock_, store_, hub_, apps_, clusters_);
  process_->reconciler.Activate();
  process_->RunAll();
  EXPECT_FALSE(process_->reconciler.loaded());
  EXPECT_TRUE(process_->publisher.published().empty());

  store_.FailWithForTest(absl::OkStatus());
  clock_.Advance(std::chrono::minutes(2));
  process_->RunAll();
  EXPECT_TRUE(process_->reconciler.loaded());
  ASSERT_EQ(process_->publisher.accepted().size(), 1U);
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

TEST_F(ReconcilerTest, ARetargetedApplicationIsDeletedFromTheOldClusterFirst) {
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

// ---------------------------------------------------------------------------------------------
// The outbox bound (ReconcilerSettings::max_outbox)

size_t CountOf(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
    ++n;
  }
  return n;
}

using mmi::testing::LogCapture;

constexpr char kPausedLog[] = "outbox full: taking no new keys";
constexpr char kResumedLog[] = "outbox drained: taking keys again";

ReconcilerSettings BoundedSettings(size_t max_outbox) {
  ReconcilerSettings settings;
  settings.batch_size = 2;
  settings.max_inflight_batches = 1;
  settings.max_outbox = max_outbox;
  return settings;
}

double Paused(const Process& p) {
  return MetricValue(p.registry, "mmi_dispatcher_outbox_paused", {});
}

TEST_F(ReconcilerTest, WithTheBrokerAwayItRecordsUpToTheBoundThenPausesUntilTheBrokerIsBack) {
  for (int i = 0; i < 12; ++i) {
    PutApp(PullApp("argocd", "app-" + std::to_string(i), "cluster1"));
  }
  LogCapture logs;
  process_ = std::make_unique<Process>(clock_, store_, hub_, apps_, clusters_, BoundedSettings(4));
  Process& p = *process_;
  p.publisher.SetConnected(false);  // nothing leaves the outbox: every event stays ready
  p.reconciler.Activate();
  for (int i = 0; i < 20; ++i) {
    clock_.Advance(std::chrono::milliseconds(200));
    p.RunAll();
  }
  EXPECT_EQ(p.outbox.ready_or_in_flight(), 4U) << "recorded up to the bound, then waited";
  EXPECT_EQ(p.outbox.pending(), 4U);
  EXPECT_EQ(p.reconciler.queue_depth(), 8U);
  EXPECT_TRUE(p.publisher.published().empty());
  EXPECT_EQ(Paused(p), 1);
  EXPECT_EQ(CountOf(logs.text(), kPausedLog), 1U) << logs.text();
  EXPECT_NE(logs.text().find("\"max_outbox\":4"), std::string::npos) << logs.text();
  EXPECT_EQ(CountOf(logs.text(), kResumedLog), 0U);

  p.publisher.SetConnected(true);
  for (int i = 0; i < 50 && p.publisher.accepted().size() < 12; ++i) {
    clock_.Advance(std::chrono::milliseconds(200));
    p.RunAll();
  }
  EXPECT_EQ(p.publisher.accepted().size(), 12U);
  EXPECT_EQ(p.outbox.pending(), 0U);
  EXPECT_EQ(p.reconciler.queue_depth(), 0U);
  EXPECT_EQ(Paused(p), 0);
  EXPECT_GE(CountOf(logs.text(), kResumedLog), 1U) << logs.text();
  EXPECT_NE(logs.text().find("\"paused_ms\":"), std::string::npos) << logs.text();
}

// Fails every publish for `cluster` with kFailedPrecondition, as Maestro's gRPC server does for
// a consumer it does not know (retried: the cluster may be registered any time); hands the
// others to `inner`.
class ClusterFailingPublisher final : public transport::Publisher {
 public:
  ClusterFailingPublisher(transport::Publisher& inner, std::string cluster)
      : inner_(inner), cluster_(std::move(cluster)) {}
  absl::Status Start() override { return inner_.Start(); }
  void Publish(cloudevents::Event event, transport::PublishCallback done) override {
    if (event.ClusterName().value_or("") == cluster_) {
      ++failed_;
      std::move(done)(absl::FailedPreconditionError("consumer is not registered"));
      return;
    }
    inner_.Publish(std::move(event), std::move(done));
  }
  void Stop() override { inner_.Stop(); }
  bool connected() const override { return inner_.connected(); }
  size_t max_in_flight() const override { return inner_.max_in_flight(); }
  int failed() const { return failed_.load(); }

 private:
  transport::Publisher& inner_;
  const std::string cluster_;
  std::atomic<int> failed_{0};
};

TEST_F(ReconcilerTest, EventsFailingForGoodInRetryBackoffDoNotHoldBackOtherClusters) {
  clusters_.OnAdd(std::make_shared<const json>(ManagedCluster("cluster2")), false);
  for (int i = 0; i < 10; ++i) {  // cluster2: known on the hub, unknown to Maestro
    PutApp(PullApp("argocd", "lost-" + std::to_string(i), "cluster2"));
  }
  // Process with a publisher failing cluster2's events.
  Loop loop(clock_, "loop");
  WorkerPool workers(clock_, "workers", 1);
  transport::testing::FakePublisher fake;
  ClusterFailingPublisher publisher(fake, "cluster2");
  ASSERT_TRUE(publisher.Start().ok());
  prometheus::Registry registry;
  DispatcherMetrics metrics(registry, "fake");
  Outbox outbox(loop, workers, store_, publisher, clock_, metrics, {});
  Reconciler reconciler(
      ReconcilerDeps{loop, workers, store_, hub_, apps_, clusters_, outbox, metrics, clock_},
      BoundedSettings(4));
  const auto run_all = [&] {
    while (loop.RunUntilIdleForTest() + workers.RunUntilIdleForTest() > 0) {
    }
  };
  reconciler.Activate();
  run_all();
  ASSERT_EQ(outbox.pending(), 10U) << "all of cluster2's events recorded, none accepted";
  ASSERT_EQ(publisher.failed(), 10);

  // Ten events (more than the bound) fail over and over; cluster1's Applications still go out.
  for (int i = 0; i < 6; ++i) {
    const std::string name = "app-" + std::to_string(i);
    apps_.Set(PullApp("argocd", name, "cluster1"));
    reconciler.Enqueue("argocd/" + name);
    clock_.Advance(std::chrono::seconds(1));  // and cluster2's retries come due meanwhile
    run_all();
    ASSERT_EQ(fake.accepted().size(), static_cast<size_t>(i + 1)) << name;
    EXPECT_EQ(fake.accepted().back().ClusterName().value(), "cluster1");
  }
  EXPECT_GT(publisher.failed(), 10) << "cluster2's events were retried";
  EXPECT_EQ(outbox.pending(), 10U);
  EXPECT_EQ(outbox.ready_or_in_flight(), 0U) << "all in retry backoff";
  EXPECT_EQ(reconciler.queue_depth(), 0U);
  EXPECT_EQ(MetricValue(registry, "mmi_dispatcher_outbox_paused", {}), 0);
}

TEST_F(ReconcilerTest, WhilePausedNoTimerIsSetHoweverManyKeysArrive) {
  for (int i = 0; i < 4; ++i) {
    PutApp(PullApp("argocd", "app-" + std::to_string(i), "cluster1"));
  }
  LogCapture logs;
  process_ = std::make_unique<Process>(clock_, store_, hub_, apps_, clusters_, BoundedSettings(4));
  Process& p = *process_;
  p.publisher.SetConnected(false);
  p.reconciler.Activate();
  p.RunAll();
  ASSERT_EQ(p.outbox.ready_or_in_flight(), 4U);
  // One more key: ProcessKeys finds the outbox full.
  PutApp(PullApp("argocd", "app-4", "cluster1"));
  p.RunAll();
  ASSERT_EQ(Paused(p), 1);
  // Many keys and ticks while paused: each key posts one ProcessKeys, which returns at once and
  // sets no timer; the only timer left is the outbox's own reconnect poll.
  for (int i = 5; i < 105; ++i) {
    PutApp(PullApp("argocd", "app-" + std::to_string(i), "cluster1"));
    clock_.Advance(std::chrono::milliseconds(50));
    p.RunAll();
    ASSERT_LE(p.loop.Pending(), 1U) << "round " << i;
  }
  EXPECT_EQ(p.reconciler.queue_depth(), 101U);
  EXPECT_EQ(p.outbox.ready_or_in_flight(), 4U);
  EXPECT_EQ(CountOf(logs.text(), kPausedLog), 1U) << "once per pause";

  p.publisher.SetConnected(true);
  for (int i = 0; i < 200 && p.publisher.accepted().size() < 105; ++i) {
    clock_.Advance(std::chrono::milliseconds(200));
    p.RunAll();
  }
  EXPECT_EQ(p.publisher.accepted().size(), 105U);
  EXPECT_EQ(Paused(p), 0);
}

}  // namespace
}  // namespace mmi::dispatcher
