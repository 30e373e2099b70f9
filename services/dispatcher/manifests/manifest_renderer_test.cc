#include "services/dispatcher/manifests/manifest_renderer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "libs/argocd_repo/testing/fake_repo_server_client.h"
#include "libs/common/loop.h"
#include "libs/common/testing/fake_clock.h"
#include "services/dispatcher/manifests/delivery_mode.h"

namespace mmi::dispatcher::manifests {
namespace {

using nlohmann::json;
using Kind = ManifestPlan::Kind;

json HubApp(const std::string& delivery = kDeliveryManifests) {
  json app = {{"apiVersion", "argoproj.io/v1alpha1"},
              {"kind", "Application"},
              {"metadata",
               {{"name", "guestbook"},
                {"namespace", "argocd"},
                {"labels", {{kPullLabel, "true"}}},
                {"annotations", {{kClusterAnnotation, "cluster1"}}}}},
              {"spec",
               {{"project", "default"},
                {"destination", {{"server", kInClusterServer}, {"namespace", "guestbook"}}},
                {"source",
                 {{"repoURL", "https://git.example/apps.git"},
                  {"path", "guestbook"},
                  {"targetRevision", "main"}}}}}};
  if (!delivery.empty()) {
    app["metadata"]["annotations"][kDeliveryAnnotation] = delivery;
  }
  return app;
}

argocd_repo::RenderedManifests Rendered(const std::string& revision, int replicas = 1) {
  return {
      .manifests =
          {R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"ui","namespace":"guestbook"},"spec":{"replicas":)" +
           std::to_string(replicas) + "}}"},
      .revision = revision,
      .source_type = "Directory"};
}

ManifestRendererSettings SettingsFor(bool enabled) {
  ManifestRendererSettings settings;
  settings.enabled = enabled;
  return settings;
}

argocd_repo::ResolvedRevision Resolved(const std::string& revision) {
  return {.revision = revision, .ambiguous_revision = "main (" + revision + ")"};
}

// The loop and the worker pool are not started: RunAll() runs their tasks on the test's thread.
class ManifestRendererTest : public ::testing::Test {
 protected:
  ManifestRenderer& Make(bool enabled = true) {
    renderer_ = std::make_unique<ManifestRenderer>(
        ManifestRenderer::Deps{
            .cache = enabled ? &cache_ : nullptr,
            .secrets = nullptr,
            .loop = &loop_,
            .on_changed = [this](const std::string& key) { changed_.push_back(key); }},
        SettingsFor(enabled));
    return *renderer_;
  }
  void RunAll() {
    while (workers_.RunUntilIdleForTest() + loop_.RunUntilIdleForTest() > 0) {
    }
  }

  mmi::testing::FakeClock clock_;
  Loop loop_{clock_, "test-loop"};
  WorkerPool workers_{clock_, "test-workers", 1};
  argocd_repo::testing::FakeRepoServerClient repo_;
  int asks_ = 0;  // RenderCache::Render asks (mmi_dispatcher_render_asks_total)
  RenderCache cache_{RenderCache::Deps{.loop = loop_,
                                       .workers = workers_,
                                       .clock = clock_,
                                       .client = repo_,
                                       .on_ask = [this](std::string_view) { ++asks_; }},
                     RenderCacheSettings{}};
  std::unique_ptr<ManifestRenderer> renderer_;
  std::vector<std::string> changed_;
};

TEST_F(ManifestRendererTest, ApplicationDeliveryAndRefusalsNeverAskTheRepoServer) {
  ManifestRenderer& renderer = Make();
  EXPECT_EQ(renderer.Prepare("argocd/guestbook", HubApp(""), false, false).kind,
            Kind::kApplication);
  EXPECT_EQ(renderer.Prepare("argocd/guestbook", HubApp("application"), false, false).kind,
            Kind::kApplication);
  const ManifestPlan typo = renderer.Prepare("argocd/guestbook", HubApp("manifest"), false, false);
  EXPECT_EQ(typo.kind, Kind::kRefused);
  EXPECT_NE(typo.message.find("unknown delivery mode"), std::string::npos) << typo.message;
  RunAll();
  EXPECT_TRUE(repo_.resolve_requests().empty());
  EXPECT_TRUE(repo_.manifest_requests().empty());

  ManifestRenderer& off = Make(/*enabled=*/false);
  const ManifestPlan refused = off.Prepare("argocd/guestbook", HubApp(), false, false);
  EXPECT_EQ(refused.kind, Kind::kRefused);
  EXPECT_EQ(refused.message, kNotConfigured);
}

// Back to Application delivery while the manifests are on the spoke: the hand-over's orphaning
// step needs them, so the render goes on, marked as asked for Application delivery.
TEST_F(ManifestRendererTest, AnApplicationHandingOverIsStillRenderedAndSaysItAsksForApplication) {
  ManifestRenderer& renderer = Make();
  repo_.SetRevision("main", Resolved("sha-1"));
  repo_.SetDefaultManifests(Rendered("sha-1"));
  const ManifestPlan pending =
      renderer.Prepare("argocd/guestbook", HubApp("application"), false, /*handing_over=*/true);
  EXPECT_EQ(pending.kind, Kind::kPending);
  EXPECT_TRUE(pending.asks_application);
  RunAll();
  const ManifestPlan plan =
      renderer.Prepare("argocd/guestbook", HubApp("application"), false, /*handing_over=*/true);
  ASSERT_EQ(plan.kind, Kind::kRendered);
  EXPECT_TRUE(plan.asks_application);
  ASSERT_TRUE(plan.dispatch.has_value());
  EXPECT_EQ(plan.dispatch->bundle.manifests.size(), 1U);
  // The hand-over done: plain Application delivery, and the render is forgotten.
  EXPECT_EQ(renderer.Prepare("argocd/guestbook", HubApp("application"), false, false).kind,
            Kind::kApplication);
  EXPECT_FALSE(
      renderer.Prepare("argocd/guestbook", HubApp("manifests"), false, false).asks_application);
}

TEST_F(ManifestRendererTest, ResolvesRendersAndTellsOnceThenAnswersTheBundle) {
  ManifestRenderer& renderer = Make();
  repo_.SetRevision("main", Resolved("sha-1"));
  repo_.SetDefaultManifests(Rendered("sha-1"));
  EXPECT_EQ(renderer.Prepare("argocd/guestbook", HubApp(), false, false).kind, Kind::kPending);
  RunAll();
  EXPECT_EQ(changed_, std::vector<std::string>{"argocd/guestbook"});
  ASSERT_EQ(repo_.manifest_requests().size(), 1U);

  const ManifestPlan plan = renderer.Prepare("argocd/guestbook", HubApp(), false, false);
  ASSERT_EQ(plan.kind, Kind::kRendered);
  ASSERT_TRUE(plan.dispatch.has_value());
  EXPECT_EQ(plan.dispatch->bundle.manifests.size(), 1U);
  EXPECT_EQ(plan.render.resource_id, plan.dispatch->resource_id);
  EXPECT_EQ(plan.render.revision, "sha-1");
  EXPECT_EQ(plan.render.source_type, "Directory");
  EXPECT_FALSE(plan.render.render_error.has_value());
  RunAll();
  // The same answer again: nothing changed, nobody told, no new render.
  EXPECT_EQ(changed_.size(), 1U);
  EXPECT_EQ(repo_.manifest_requests().size(), 1U);
}

TEST_F(ManifestRendererTest, ARenderErrorKeepsTheLastGoodBundleAndShowsTheError) {
  ManifestRenderer& renderer = Make();
  repo_.SetRevision("main", Resolved("sha-1"));
  repo_.SetDefaultManifests(Rendered("sha-1"));
  renderer.Prepare("argocd/guestbook", HubApp(), false, false);
  RunAll();
  const ManifestPlan good = renderer.Prepare("argocd/guestbook", HubApp(), false, false);
  ASSERT_TRUE(good.dispatch.has_value());

  // A broken commit: the refresh resolves it at once, its render fails.
  repo_.SetRevision("main", Resolved("sha-2"));
  repo_.SetDefaultManifests(absl::FailedPreconditionError("kustomize build: broken"));
  renderer.Prepare("argocd/guestbook", HubApp(), /*refresh=*/true, false);
  RunAll();
  EXPECT_EQ(changed_.size(), 2U);
  const ManifestPlan broken = renderer.Prepare("argocd/guestbook", HubApp(), false, false);
  ASSERT_EQ(broken.kind, Kind::kRendered);
  ASSERT_TRUE(broken.dispatch.has_value());
  EXPECT_EQ(broken.dispatch->payload_hash, good.dispatch->payload_hash);  // nothing new is sent
  EXPECT_EQ(broken.render.revision, "sha-1");  // the revision of what the spoke runs
  ASSERT_TRUE(broken.render.render_error.has_value());
  EXPECT_NE(broken.render.render_error->find("kustomize build: broken"), std::string::npos);

  // The fix: a new bundle, the error gone.
  repo_.SetRevision("main", Resolved("sha-3"));
  repo_.SetDefaultManifests(Rendered("sha-3", 2));
  renderer.Prepare("argocd/guestbook", HubApp(), /*refresh=*/true, false);
  RunAll();
  const ManifestPlan fixed = renderer.Prepare("argocd/guestbook", HubApp(), false, false);
  ASSERT_TRUE(fixed.dispatch.has_value());
  EXPECT_NE(fixed.dispatch->payload_hash, good.dispatch->payload_hash);
  EXPECT_EQ(fixed.render.revision, "sha-3");
  EXPECT_FALSE(fixed.render.render_error.has_value());
}

TEST_F(ManifestRendererTest, AFirstRenderFailingHasNoBundleButItsErrorAndResourceId) {
  ManifestRenderer& renderer = Make();
  repo_.SetRevision("main", Resolved("sha-1"));
  repo_.SetDefaultManifests(absl::FailedPreconditionError("helm template: boom"));
  renderer.Prepare("argocd/guestbook", HubApp(), false, false);
  RunAll();
  const ManifestPlan plan = renderer.Prepare("argocd/guestbook", HubApp(), false, false);
  ASSERT_EQ(plan.kind, Kind::kRendered);
  EXPECT_FALSE(plan.dispatch.has_value());
  EXPECT_EQ(plan.render.revision, "");
  EXPECT_FALSE(plan.render.resource_id.empty());
  ASSERT_TRUE(plan.render.render_error.has_value());
  EXPECT_NE(plan.render.render_error->find("helm template: boom"), std::string::npos);

  // A revision that cannot be resolved is shown the same way.
  repo_.SetRevision("main", absl::FailedPreconditionError("unable to resolve 'main'"));
  renderer.Prepare("argocd/guestbook", HubApp(), /*refresh=*/true, false);
  RunAll();
  const ManifestPlan unresolved = renderer.Prepare("argocd/guestbook", HubApp(), false, false);
  ASSERT_TRUE(unresolved.render.render_error.has_value());
  EXPECT_NE(unresolved.render.render_error->find("resolving the revision"), std::string::npos)
      << *unresolved.render.render_error;
}

TEST_F(ManifestRendererTest, ANewCommitRollsOutAfterTheResolveIntervalWithoutAHubChange) {
  ManifestRenderer& renderer = Make();
  repo_.SetRevision("main", Resolved("sha-1"));
  repo_.SetDefaultManifests(Rendered("sha-1"));
  renderer.Prepare("argocd/guestbook", HubApp(), false, false);
  RunAll();
  ASSERT_EQ(changed_.size(), 1U);
  repo_.SetRevision("main", Resolved("sha-2"));
  repo_.SetDefaultManifests(Rendered("sha-2", 3));
  clock_.Advance(std::chrono::seconds(179));
  RunAll();
  EXPECT_EQ(changed_.size(), 1U);
  clock_.Advance(std::chrono::seconds(1));
  RunAll();
  ASSERT_EQ(changed_.size(), 2U);                                // the timer: decide the key again
  renderer.Prepare("argocd/guestbook", HubApp(), false, false);  // what the reconciler then does
  RunAll();
  ASSERT_EQ(changed_.size(), 3U);  // the new commit's render
  const ManifestPlan plan = renderer.Prepare("argocd/guestbook", HubApp(), false, false);
  EXPECT_EQ(plan.render.revision, "sha-2");
  EXPECT_EQ(repo_.resolve_requests().size(), 2U);
}

TEST_F(ManifestRendererTest, AFleetOnOneSourceSharesOneRender) {
  ManifestRenderer& renderer = Make();
  repo_.SetRevision("main", Resolved("sha-1"));
  repo_.SetDefaultManifests(Rendered("sha-1"));
  std::vector<std::string> hashes;
  for (int i = 0; i < 50; ++i) {
    json app = HubApp();
    app["metadata"]["name"] = "guestbook-" + std::to_string(i);
    app["metadata"]["annotations"][kClusterAnnotation] = "cluster" + std::to_string(i);
    renderer.Prepare("argocd/guestbook-" + std::to_string(i), app, false, false);
  }
  RunAll();
  EXPECT_EQ(changed_.size(), 50U);
  EXPECT_EQ(repo_.resolve_requests().size(), 1U);
  EXPECT_EQ(repo_.manifest_requests().size(), 1U);
}

// `count` Applications named `prefix`-i on one source (repoURL `repo`, targetRevision
// `revision`), each prepared once; returns their keys.
std::vector<std::string> PrepareFleet(ManifestRenderer& renderer, const std::string& prefix,
                                      int count, const std::string& repo,
                                      const std::string& revision) {
  std::vector<std::string> keys;
  for (int i = 0; i < count; ++i) {
    json app = HubApp();
    app["metadata"]["name"] = prefix + "-" + std::to_string(i);
    app["metadata"]["annotations"][kClusterAnnotation] = prefix + std::to_string(i);
    app["spec"]["source"]["repoURL"] = repo;
    app["spec"]["source"]["targetRevision"] = revision;
    keys.push_back("argocd/" + prefix + "-" + std::to_string(i));
    renderer.Prepare(keys.back(), app, false, false);
  }
  return keys;
}

json FleetApp(const std::string& key, const std::string& repo, const std::string& revision) {
  const std::string name = key.substr(key.find('/') + 1);
  json app = HubApp();
  app["metadata"]["name"] = name;
  app["metadata"]["annotations"][kClusterAnnotation] =
      name.substr(0, name.find('-')) + name.substr(name.find('-') + 1);
  app["spec"]["source"]["repoURL"] = repo;
  app["spec"]["source"]["targetRevision"] = revision;
  return app;
}

TEST_F(ManifestRendererTest, ATickWithNothingNewResolvesEachSourceOnceAndDecidesNoKey) {
  ManifestRenderer& renderer = Make();
  repo_.SetRevision("main", Resolved("sha-1"));
  repo_.SetRevision("stable", Resolved("sha-s"));
  repo_.SetDefaultManifests(Rendered("sha-1"));
  PrepareFleet(renderer, "a", 40, "https://git.example/a.git", "main");
  PrepareFleet(renderer, "b", 20, "https://git.example/b.git", "stable");
  RunAll();
  ASSERT_EQ(changed_.size(), 60U);
  const int asks = asks_;
  const size_t renders = repo_.manifest_requests().size();
  changed_.clear();

  for (int tick = 1; tick <= 3; ++tick) {
    clock_.Advance(std::chrono::seconds(180));
    RunAll();
    EXPECT_TRUE(changed_.empty()) << "tick " << tick << ": " << changed_.size() << " keys told";
    EXPECT_EQ(repo_.resolve_requests().size(), 2U + 2U * tick);  // one per source and tick
  }
  EXPECT_EQ(asks_, asks);  // no render asked for: the asks metric does not move
  EXPECT_EQ(repo_.manifest_requests().size(), renders);
}

TEST_F(ManifestRendererTest, ANewCommitOnOneSourceDecidesOnlyItsKeysAgain) {
  ManifestRenderer& renderer = Make();
  repo_.SetRevision("main", Resolved("sha-1"));
  repo_.SetRevision("stable", Resolved("sha-s"));
  repo_.SetDefaultManifests(Rendered("sha-1"));
  const std::vector<std::string> a =
      PrepareFleet(renderer, "a", 30, "https://git.example/a.git", "main");
  const std::vector<std::string> b =
      PrepareFleet(renderer, "b", 10, "https://git.example/b.git", "stable");
  RunAll();
  changed_.clear();

  repo_.SetRevision("main", Resolved("sha-2"));
  repo_.SetDefaultManifests(Rendered("sha-2", 2));
  clock_.Advance(std::chrono::seconds(180));
  RunAll();
  std::vector<std::string> told = changed_;
  std::sort(told.begin(), told.end());
  std::vector<std::string> expected = a;
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(told, expected);  // the keys of source a, none of b

  // The reconciler decides them again: source a renders at sha-2, b stays at sha-s.
  changed_.clear();
  for (const std::string& key : a) {
    renderer.Prepare(key, FleetApp(key, "https://git.example/a.git", "main"), false, false);
  }
  RunAll();
  EXPECT_EQ(changed_.size(), a.size());  // each key's new render
  EXPECT_EQ(
      renderer.Prepare(a[0], FleetApp(a[0], "https://git.example/a.git", "main"), false, false)
          .render.revision,
      "sha-2");
  EXPECT_EQ(
      renderer.Prepare(b[0], FleetApp(b[0], "https://git.example/b.git", "stable"), false, false)
          .render.revision,
      "sha-1");  // b was not rendered again (the fake would now answer sha-2)
  RunAll();

  changed_.clear();
  clock_.Advance(std::chrono::seconds(180));
  RunAll();
  EXPECT_TRUE(changed_.empty());
}

TEST_F(ManifestRendererTest, ARefreshSeenByOneKeyIsComparedKeyByKeyAtTheNextTick) {
  ManifestRenderer& renderer = Make();
  repo_.SetRevision("main", Resolved("sha-1"));
  repo_.SetDefaultManifests(Rendered("sha-1"));
  const std::vector<std::string> a =
      PrepareFleet(renderer, "a", 5, "https://git.example/a.git", "main");
  RunAll();
  clock_.Advance(std::chrono::seconds(180));
  RunAll();  // the first tick: told sha-1
  changed_.clear();

  // One key's refresh sees sha-2; the commit is then reverted, so the next tick answers sha-1,
  // what the source was last told, yet that key must be decided again.
  repo_.SetRevision("main", Resolved("sha-2"));
  renderer.Prepare(a[0], FleetApp(a[0], "https://git.example/a.git", "main"), /*refresh=*/true,
                   false);
  RunAll();
  changed_.clear();
  repo_.SetRevision("main", Resolved("sha-1"));
  clock_.Advance(std::chrono::seconds(180));
  RunAll();
  EXPECT_EQ(changed_, std::vector<std::string>{a[0]});
}

TEST_F(ManifestRendererTest, AnAnswerComingBackAfterAnErrorIsNotNewToKeysThatSawIt) {
  ManifestRenderer& renderer = Make();
  repo_.SetRevision("main", Resolved("sha-1"));
  repo_.SetDefaultManifests(Rendered("sha-1"));
  const std::vector<std::string> a =
      PrepareFleet(renderer, "a", 3, "https://git.example/a.git", "main");
  RunAll();
  clock_.Advance(std::chrono::seconds(180));
  RunAll();  // the first tick: told sha-1
  changed_.clear();

  // A resolve error is new to every key; the keys are not decided again meanwhile, so when the
  // revision comes back it is the answer they saw (the same generation), not a new one.
  repo_.SetRevision("main", absl::NotFoundError("unable to resolve 'main'"));
  clock_.Advance(std::chrono::seconds(180));
  RunAll();
  std::vector<std::string> told = changed_;
  std::sort(told.begin(), told.end());
  std::vector<std::string> expected = a;
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(told, expected);

  changed_.clear();
  repo_.SetRevision("main", Resolved("sha-1"));
  clock_.Advance(std::chrono::seconds(180));
  RunAll();
  EXPECT_TRUE(changed_.empty()) << changed_.size() << " keys told";
}

TEST_F(ManifestRendererTest, ARetryableRenderErrorIsAskedForAgainAtEachTickUntilItRenders) {
  ManifestRenderer& renderer = Make();
  repo_.SetRevision("main", Resolved("sha-1"));
  // The default answer of the fake is kUnavailable: the repo-server was not reached.
  renderer.Prepare("argocd/guestbook", HubApp(), false, false);
  RunAll();
  ASSERT_EQ(changed_.size(), 1U);
  ASSERT_TRUE(renderer.Prepare("argocd/guestbook", HubApp(), false, false).render.render_error);
  RunAll();
  changed_.clear();

  clock_.Advance(std::chrono::seconds(180));
  RunAll();
  EXPECT_EQ(changed_, std::vector<std::string>{"argocd/guestbook"});  // same revision, retried
  repo_.SetDefaultManifests(Rendered("sha-1"));
  changed_.clear();
  renderer.Prepare("argocd/guestbook", HubApp(), false, false);
  RunAll();
  EXPECT_EQ(changed_.size(), 1U);  // rendered now
  EXPECT_FALSE(renderer.Prepare("argocd/guestbook", HubApp(), false, false).render.render_error);
  RunAll();

  changed_.clear();
  clock_.Advance(std::chrono::seconds(180));
  RunAll();
  EXPECT_TRUE(changed_.empty());  // rendered: no longer retried
}

TEST_F(ManifestRendererTest, AForgottenKeyLeavesItsSourceAndTheTickStops) {
  ManifestRenderer& renderer = Make();
  repo_.SetRevision("main", Resolved("sha-1"));
  repo_.SetDefaultManifests(Rendered("sha-1"));
  renderer.Prepare("argocd/guestbook", HubApp(), false, false);
  RunAll();
  renderer.Forget("argocd/guestbook");
  changed_.clear();
  clock_.Advance(std::chrono::seconds(180));
  RunAll();
  EXPECT_TRUE(changed_.empty());
  EXPECT_EQ(repo_.resolve_requests().size(), 1U);  // no source left to resolve
  clock_.Advance(std::chrono::seconds(180));
  RunAll();
  EXPECT_EQ(loop_.Pending(), 0U);  // not armed again
}

}  // namespace
}  // namespace mmi::dispatcher::manifests
