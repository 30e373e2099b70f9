// The Reconciler with manifest delivery (ADR 0007), on a fake ManifestDelivery: what it records,
// writes on the hub and leaves alone for each plan.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "libs/cloudevents/manifest_bundle.h"
#include "libs/cloudevents/resource_id.h"
#include "services/dispatcher/apps/manifest_delivery.h"
#include "services/dispatcher/apps/manifest_writes.h"
#include "services/dispatcher/apps/testing/pipeline_fixture.h"
#include "services/dispatcher/apps/testing/reconciler_fixture.h"

namespace mmi::dispatcher::testing {
namespace {

using nlohmann::json;
using Kind = ManifestPlan::Kind;

// Answers `plan` for every key; records the refresh flags asked with.
class FakeManifests final : public ManifestDelivery {
 public:
  ManifestPlan Prepare(const std::string& /*key*/, const json& /*app*/, bool refresh,
                       bool /*handing_over*/) override {
    refreshes.push_back(refresh);
    return plan;
  }
  void Forget(const std::string& key) override { forgotten.push_back(key); }

  ManifestPlan plan;
  std::vector<bool> refreshes;
  std::vector<std::string> forgotten;
};

// The plan of a rendered bundle of `app` holding one ConfigMap with `data`.
ManifestPlan Rendered(const json& app, const std::string& data, const std::string& revision,
                      std::optional<std::string> error = std::nullopt) {
  Dispatch d = DispatchIdentityOf(app, PayloadSettings{}).value();
  d.bundle.manifests.push_back(json{{"apiVersion", "v1"},
                                    {"kind", "ConfigMap"},
                                    {"metadata", {{"name", "cm"}, {"namespace", "guestbook"}}},
                                    {"data", {{"k", data}}}});
  d.bundle.delete_option.emplace();
  d.bundle.delete_option->propagation_policy = "Foreground";
  d.payload_hash = PayloadHashOf(d.bundle, d.work_meta);
  d.request_free_hash = d.payload_hash;
  ManifestPlan plan;
  plan.kind = Kind::kRendered;
  plan.render = {.resource_id = d.resource_id,
                 .revision = revision,
                 .source_type = "Directory",
                 .render_error = std::move(error)};
  plan.dispatch = std::move(d);
  return plan;
}

using ManifestReconcileTest = PipelineTest;

TEST_F(ManifestReconcileTest, RecordsTheBundleWithItsRowThenOnlyTheRowWhileTheBundleIsTheSame) {
  const json app = PutApp(PullApp("argocd", "guestbook", "cluster1"));
  const std::string id = IdOf("cluster1", "argocd", "guestbook");
  FakeManifests manifests;
  manifests.plan = Rendered(app, "v1", "sha-1");
  Process& p = Start({}, nullptr, &manifests);
  ASSERT_EQ(p.publisher.accepted().size(), 1U);
  auto recorded = store_.GetResource(id);
  ASSERT_TRUE(recorded.ok() && recorded->has_value());
  EXPECT_NE((*recorded)->payload.find("Foreground"), std::string::npos);  // the bundle was sent
  EXPECT_EQ(store_.GetManifestRender(id).value(), manifests.plan.render);
  EXPECT_EQ(store_.manifest_render_notifications(), std::vector<std::string>{id});

  // A new commit rendering the same output: nothing is sent, only the row (and its NOTIFY).
  manifests.plan = Rendered(app, "v1", "sha-2");
  Sync("argocd", "guestbook");
  p.RunAll();
  EXPECT_EQ(p.publisher.accepted().size(), 1U);
  EXPECT_EQ(store_.GetManifestRender(id).value()->revision, "sha-2");
  EXPECT_EQ(store_.manifest_render_notifications().size(), 2U);
  // Decided again with the same plan: no write at all.
  Sync("argocd", "guestbook");
  p.RunAll();
  EXPECT_EQ(store_.manifest_render_notifications().size(), 2U);

  // A broken commit: the last bundle stays, the row carries the error.
  manifests.plan = Rendered(app, "v1", "sha-2", "kustomize build: broken");
  Sync("argocd", "guestbook");
  p.RunAll();
  EXPECT_EQ(p.publisher.accepted().size(), 1U);
  EXPECT_EQ(store_.GetManifestRender(id).value()->render_error, "kustomize build: broken");

  // The fix changes the output: an update, recorded with its row.
  manifests.plan = Rendered(app, "v2", "sha-3");
  Sync("argocd", "guestbook");
  p.RunAll();
  ASSERT_EQ(p.publisher.accepted().size(), 2U);
  EXPECT_EQ(p.publisher.accepted()[1].type, cloudevents::kSpecUpdateRequestType);
  EXPECT_EQ(store_.GetManifestRender(id).value(), manifests.plan.render);
}

TEST_F(ManifestReconcileTest, ARefusalOrAFirstFailedRenderIsShownOnTheHubOnceAndNothingIsSent) {
  PutApp(PullApp("argocd", "guestbook", "cluster1"));
  FakeManifests manifests;
  manifests.plan.kind = Kind::kRefused;
  manifests.plan.message = "manifest delivery is not configured";
  Process& p = Start({}, nullptr, &manifests);
  EXPECT_TRUE(p.publisher.accepted().empty());
  auto shown = hub_.Get(ApplicationsRef("argocd"), "guestbook").value();
  EXPECT_EQ(shown["status"]["sync"]["status"], "Unknown");
  ASSERT_EQ(shown["status"]["conditions"].size(), 1U);
  EXPECT_EQ(shown["status"]["conditions"][0]["type"], "ComparisonError");
  EXPECT_EQ(shown["status"]["conditions"][0]["message"], "manifest delivery is not configured");
  auto events = hub_.List({"", "v1", "events", "argocd"}, {}).value();
  ASSERT_EQ(events.items.size(), 1U);
  EXPECT_EQ(events.items[0]["reason"], "ManifestDeliveryFailed");
  EXPECT_EQ(events.items[0]["type"], "Warning");
  // The same refusal again: not written again.
  Sync("argocd", "guestbook");
  p.RunAll();
  EXPECT_EQ(hub_.List({"", "v1", "events", "argocd"}, {}).value().items.size(), 1U);

  // Its first render fails: the error replaces the refusal on the hub; still nothing sent.
  manifests.plan = Rendered(PullApp("argocd", "guestbook", "cluster1"), "v1", "", "helm: boom");
  manifests.plan.dispatch.reset();
  Sync("argocd", "guestbook");
  p.RunAll();
  EXPECT_TRUE(p.publisher.accepted().empty());
  shown = hub_.Get(ApplicationsRef("argocd"), "guestbook").value();
  EXPECT_EQ(shown["status"]["conditions"][0]["message"], "helm: boom");
  EXPECT_EQ(hub_.List({"", "v1", "events", "argocd"}, {}).value().items.size(), 2U);
}

TEST_F(ManifestReconcileTest, ARefreshIsAskedForAndThenRemovedFromTheHub) {
  json app = PullApp("argocd", "guestbook", "cluster1");
  app["metadata"]["annotations"][kRefreshAnnotation] = "hard";
  app = PutApp(app);
  FakeManifests manifests;
  manifests.plan = Rendered(app, "v1", "sha-1");
  Process& p = Start({}, nullptr, &manifests);
  ASSERT_FALSE(manifests.refreshes.empty());
  EXPECT_TRUE(manifests.refreshes[0]);
  const json after = hub_.Get(ApplicationsRef("argocd"), "guestbook").value();
  EXPECT_FALSE(after["metadata"]["annotations"].contains(kRefreshAnnotation));
  EXPECT_EQ(p.publisher.accepted().size(), 1U);
}

TEST_F(ManifestReconcileTest, PendingAndApplicationDeliveryPlans) {
  PutApp(PullApp("argocd", "guestbook", "cluster1"));
  FakeManifests manifests;
  manifests.plan.kind = Kind::kPending;
  Process& p = Start({}, nullptr, &manifests);
  EXPECT_TRUE(p.publisher.accepted().empty());
  EXPECT_FALSE(hub_.Get(ApplicationsRef("argocd"), "guestbook").value().contains("status"));
  manifests.plan = ManifestPlan{};  // kApplication: the Application itself goes
  Sync("argocd", "guestbook");
  p.RunAll();
  ASSERT_EQ(p.publisher.accepted().size(), 1U);
  EXPECT_FALSE(store_.GetManifestRender(IdOf("cluster1", "argocd", "guestbook")).value());
}

// ManifestWrites alone: each distinct row is written once per resource, resources of one source
// and revision share one row in memory, and rows nobody holds are dropped.
TEST(ManifestWritesTest, WritesEachChangeOnceAndSharesEqualRows) {
  mmi::testing::FakeClock clock;
  store::testing::FakeDispatchStore store;
  kube::testing::FakeKubeClient hub;
  WorkerPool workers(clock, "workers", 1);
  prometheus::Registry registry;
  DispatcherMetrics metrics(registry, "fake");
  const ReconcilerSettings settings;
  ManifestWrites writes({workers, store, hub, metrics, clock}, settings);
  auto row = [](const std::string& id, const std::string& revision,
                std::optional<std::string> error = std::nullopt) {
    return store::ManifestRender{.resource_id = id,
                                 .revision = revision,
                                 .source_type = "Directory",
                                 .render_error = std::move(error)};
  };
  auto writes_so_far = [&] {
    workers.RunUntilIdleForTest();
    return store.manifest_render_notifications().size();
  };
  std::vector<std::string> ids;
  for (int i = 0; i < 50; ++i) {
    ids.push_back(cloudevents::FormatUuid(
        cloudevents::UuidV5(cloudevents::kOidNamespace, "resource-" + std::to_string(i))));
  }
  ids.push_back("not-a-uuid");  // kept by string

  for (const std::string& id : ids) {
    writes.PutRender(row(id, "sha-1"));
  }
  EXPECT_EQ(writes_so_far(), ids.size());
  EXPECT_EQ(writes.resources_held(), ids.size());
  EXPECT_EQ(writes.distinct_rows_held(), 1U);
  for (const std::string& id : ids) {
    writes.PutRender(row(id, "sha-1"));  // unchanged: not written again
  }
  EXPECT_EQ(writes_so_far(), ids.size());

  struct Step {
    const char* what;
    std::string id;
    store::ManifestRender put;
    size_t new_writes;
  };
  const std::vector<Step> steps = {
      {"a new revision", ids[0], row(ids[0], "sha-2"), 1},
      {"the same again", ids[0], row(ids[0], "sha-2"), 0},
      {"a render error", ids[0], row(ids[0], "sha-2", "kustomize build: broken"), 1},
      {"the error again", ids[0], row(ids[0], "sha-2", "kustomize build: broken"), 0},
      {"its end", ids[0], row(ids[0], "sha-2"), 1},
      {"the string id changes", "not-a-uuid", row("not-a-uuid", "sha-2"), 1},
      {"another resource, sha-1 still", ids[1], row(ids[1], "sha-1"), 0},
  };
  for (const Step& step : steps) {
    const size_t before = writes_so_far();
    writes.PutRender(step.put);
    EXPECT_EQ(writes_so_far() - before, step.new_writes) << step.what;
  }

  // Recorded with its bundle: not written again; forgotten: written again.
  writes.Recorded(row(ids[2], "sha-3"));
  size_t before = writes_so_far();
  writes.PutRender(row(ids[2], "sha-3"));
  EXPECT_EQ(writes_so_far(), before);
  writes.Forget("argocd/app-2", ids[2]);
  writes.Forget("argocd/other", "not-a-uuid");
  EXPECT_EQ(writes.resources_held(), ids.size() - 2);
  writes.PutRender(row(ids[2], "sha-3"));
  EXPECT_EQ(writes_so_far(), before + 1);

  // 300 revisions of one resource: the rows nobody holds any more are dropped.
  for (int r = 0; r < 300; ++r) {
    writes.PutRender(row(ids[3], "rev-" + std::to_string(r)));
  }
  EXPECT_EQ(writes_so_far(), before + 1 + 300);
  EXPECT_LE(writes.distinct_rows_held(), 80U);
}

TEST(ComparisonErrorPatchTest, SetsUnknownSyncAndOneCondition) {
  EXPECT_EQ(
      ComparisonErrorPatch("boom", "2026-11-29T06:00:00Z"),
      (json{{"status",
             {{"sync", {{"status", "Unknown"}}},
              {"conditions", json::array({{{"type", "ComparisonError"},
                                           {"message", "boom"},
                                           {"lastTransitionTime", "2026-11-29T06:00:00Z"}}})}}}}));
}

}  // namespace
}  // namespace mmi::dispatcher::testing
