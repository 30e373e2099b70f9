#include "services/dispatcher/manifests/render_cache.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "libs/argocd_repo/request_builder.h"
#include "libs/argocd_repo/testing/fake_repo_server_client.h"
#include "libs/common/loop.h"
#include "libs/common/testing/fake_clock.h"

namespace mmi::dispatcher::manifests {
namespace {

using argocd_repo::ManifestRequest;
using argocd_repo::ResolveRevisionRequest;
using nlohmann::json;

json Source(const json& extra = json::object()) {
  json source = {{"repoURL", "https://git.example/apps.git"},
                 {"path", "guestbook"},
                 {"targetRevision", "main"}};
  source.update(extra);
  return source;
}

json AppFor(const std::string& name, const json& source) {
  return json{
      {"metadata", {{"name", name}, {"namespace", "argocd"}}},
      {"spec",
       {{"project", "default"},
        {"destination", {{"server", "https://kubernetes.default.svc"}, {"namespace", "guestbook"}}},
        {"source", source}}}};
}

ManifestRequest RequestFor(const std::string& name, const json& source,
                           const std::string& revision = "sha-1") {
  absl::StatusOr<ManifestRequest> request =
      argocd_repo::BuildManifestRequest(AppFor(name, source), revision, {});
  EXPECT_TRUE(request.ok()) << request.status();
  return request.ok() ? *request : ManifestRequest{};
}

ResolveRevisionRequest ResolveFor(const std::string& name, const json& source) {
  absl::StatusOr<ResolveRevisionRequest> request =
      argocd_repo::BuildResolveRevisionRequest(AppFor(name, source), "");
  EXPECT_TRUE(request.ok()) << request.status();
  return request.ok() ? *request : ResolveRevisionRequest{};
}

argocd_repo::RenderedManifests Rendered(const std::string& revision, const std::string& type) {
  return argocd_repo::RenderedManifests{
      .manifests = {R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"}})"},
      .revision = revision,
      .source_type = type};
}

// The loop and the worker pool are not started: the test runs their tasks on its own thread,
// so "concurrent" asks are the asks made before the workers run.
class RenderCacheTest : public ::testing::Test {
 protected:
  RenderCache& Make(RenderCacheSettings settings = {}) {
    cache_ = std::make_unique<RenderCache>(
        RenderCache::Deps{.loop = loop_, .workers = workers_, .clock = clock_, .client = repo_},
        settings);
    return *cache_;
  }

  void RunAll() {
    while (workers_.RunUntilIdleForTest() + loop_.RunUntilIdleForTest() > 0) {
    }
  }

  // Asks for `request` and keeps the answer in `results`.
  void Ask(const ManifestRequest& request, std::vector<RenderResult>& results,
           bool refresh = false) {
    cache_->Render(request, refresh, [&results](const RenderResult& r) { results.push_back(r); });
  }

  mmi::testing::FakeClock clock_;
  Loop loop_{clock_, "test-loop"};
  WorkerPool workers_{clock_, "test-workers", 1};
  argocd_repo::testing::FakeRepoServerClient repo_;
  std::unique_ptr<RenderCache> cache_;
};

TEST_F(RenderCacheTest, AFleetAskingAtOnceMakesOneRenderAndAllGetIt) {
  std::map<std::string, int> asks;
  cache_ = std::make_unique<RenderCache>(
      RenderCache::Deps{
          .loop = loop_,
          .workers = workers_,
          .clock = clock_,
          .client = repo_,
          .on_ask = [&asks](std::string_view outcome) { ++asks[std::string(outcome)]; }},
      RenderCacheSettings{});
  const RenderCache& cache = *cache_;
  repo_.SetDefaultManifests(Rendered("sha-1", "Kustomize"));
  const json kustomize = Source({{"kustomize", json::object()}});
  std::vector<RenderResult> results;
  const ManifestRequest first = RequestFor("guestbook-cluster0", kustomize);
  for (int i = 0; i < 3000; ++i) {
    ManifestRequest request = first;  // what BuildManifestRequest gives each cluster's app
    request.body["appName"] = absl::StrCat("argocd_guestbook-cluster", i);
    Ask(request, results);
  }
  EXPECT_TRUE(results.empty());  // never answered inside Render()
  RunAll();
  ASSERT_EQ(results.size(), 3000U);
  ASSERT_EQ(repo_.manifest_requests().size(), 1U);
  EXPECT_FALSE(repo_.manifest_requests()[0].body.contains("appLabelKey"));  // RenderRequestOf
  for (const RenderResult& r : results) {
    EXPECT_TRUE(r.error.ok());
    EXPECT_EQ(r.manifests, results[0].manifests);  // one render, shared
    EXPECT_EQ(r.key, results[0].key);
  }
  EXPECT_EQ(results[0].manifests->revision, "sha-1");

  // Later asks are answered from the cache: the revision is resolved, the render is final.
  Ask(RequestFor("guestbook-late", kustomize), results);
  RunAll();
  EXPECT_EQ(results.size(), 3001U);
  EXPECT_EQ(repo_.manifest_requests().size(), 1U);
  // Each ask counted once, by how it was served.
  EXPECT_EQ(asks, (std::map<std::string, int>{{"render", 1}, {"joined", 2999}, {"hit", 1}}));
  EXPECT_EQ(cache.renders(), 1U);
}

TEST_F(RenderCacheTest, AnUndetectedSourceRendersOnceThenSharesWhenItIsPlain) {
  RenderCache& cache = Make();
  repo_.SetDefaultManifests(Rendered("sha-1", "Directory"));
  std::vector<RenderResult> results;
  for (int i = 0; i < 100; ++i) {
    Ask(RequestFor(absl::StrCat("app", i), Source()), results);
  }
  RunAll();
  ASSERT_EQ(results.size(), 100U);
  EXPECT_EQ(repo_.manifest_requests().size(), 1U);
  for (const RenderResult& r : results) {
    EXPECT_EQ(r.manifests, results[0].manifests);
  }
  // The detected type stays known: a new Application shares the render without a call.
  Ask(RequestFor("app-new", Source()), results);
  RunAll();
  EXPECT_EQ(repo_.manifest_requests().size(), 1U);
  EXPECT_EQ(results.back().manifests, results[0].manifests);
  EXPECT_EQ(cache.in_flight(), 0);
}

TEST_F(RenderCacheTest, AnUndetectedHelmChartRendersOncePerApplicationName) {
  Make();
  repo_.SetDefaultManifests(Rendered("sha-1", "Helm"));
  std::vector<RenderResult> results;
  for (int i = 0; i < 10; ++i) {
    Ask(RequestFor(absl::StrCat("app", i), Source()), results);
  }
  RunAll();
  ASSERT_EQ(results.size(), 10U);
  // The first render detected Helm: each name is its own release.
  EXPECT_EQ(repo_.manifest_requests().size(), 10U);
  std::set<std::string> names;
  for (const ManifestRequest& sent : repo_.manifest_requests()) {
    names.insert(sent.body["appName"].get<std::string>());
  }
  EXPECT_EQ(names.size(), 10U);
}

TEST_F(RenderCacheTest, AFailedProbeAnswersEveryWaitingAskWithItsError) {
  Make();
  repo_.SetDefaultManifests(absl::FailedPreconditionError("kustomization.yaml: bad"));
  std::vector<RenderResult> results;
  for (int i = 0; i < 5; ++i) {
    Ask(RequestFor(absl::StrCat("app", i), Source()), results);
  }
  RunAll();
  ASSERT_EQ(results.size(), 5U);
  EXPECT_EQ(repo_.manifest_requests().size(), 1U);
  for (const RenderResult& r : results) {
    EXPECT_EQ(r.error.code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(r.manifests, nullptr);
  }
  // Another Application of the broken source: its error, without a render per name...
  Ask(RequestFor("app-new", Source()), results);
  RunAll();
  EXPECT_EQ(repo_.manifest_requests().size(), 1U);
  EXPECT_EQ(results.back().error.code(), absl::StatusCode::kFailedPrecondition);
  // ...until a refresh.
  repo_.SetDefaultManifests(Rendered("sha-1", "Directory"));
  Ask(RequestFor("app-new", Source()), results, /*refresh=*/true);
  RunAll();
  EXPECT_EQ(repo_.manifest_requests().size(), 2U);
  EXPECT_TRUE(results.back().error.ok());
  Ask(RequestFor("app0", Source()), results);  // shares it now
  RunAll();
  EXPECT_EQ(repo_.manifest_requests().size(), 2U);
  EXPECT_EQ(results.back().manifests, results[results.size() - 2].manifests);
}

TEST_F(RenderCacheTest, AnErrorKeepsTheLastGoodRenderAndIsReportedBesideIt) {
  Make();
  const json directory = Source({{"directory", json::object()}});
  repo_.SetDefaultManifests(Rendered("sha-1", "Directory"));
  std::vector<RenderResult> results;
  Ask(RequestFor("a", directory), results);
  RunAll();
  ASSERT_EQ(results.size(), 1U);
  const auto good = results[0].manifests;
  ASSERT_NE(good, nullptr);

  // A refresh renders again; the repo-server times out: the error, with the last good render.
  repo_.SetDefaultManifests(absl::DeadlineExceededError("GenerateManifest: deadline"));
  Ask(RequestFor("a", directory), results, /*refresh=*/true);
  RunAll();
  ASSERT_EQ(results.size(), 2U);
  EXPECT_EQ(results[1].error.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(results[1].manifests, good);
  EXPECT_EQ(repo_.manifest_requests().size(), 2U);

  // A retryable error renders again on the next ask, without a refresh...
  repo_.SetDefaultManifests(absl::FailedPreconditionError("helm template: broken"));
  Ask(RequestFor("b", directory), results);
  RunAll();
  ASSERT_EQ(results.size(), 3U);
  EXPECT_EQ(repo_.manifest_requests().size(), 3U);
  EXPECT_EQ(results[2].error.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(results[2].manifests, good);

  // ...a render error only on a refresh.
  repo_.SetDefaultManifests(Rendered("sha-1", "Directory"));
  Ask(RequestFor("c", directory), results);
  RunAll();
  EXPECT_EQ(repo_.manifest_requests().size(), 3U);
  EXPECT_EQ(results[3].error.code(), absl::StatusCode::kFailedPrecondition);
  Ask(RequestFor("c", directory), results, /*refresh=*/true);
  RunAll();
  EXPECT_EQ(repo_.manifest_requests().size(), 4U);
  EXPECT_TRUE(results[4].error.ok());
  EXPECT_NE(results[4].manifests, good);  // a new render
}

TEST_F(RenderCacheTest, AtMostMaxInFlightCallsRunAndTheRestQueue) {
  RenderCache& cache = Make(RenderCacheSettings{.max_in_flight = 2});
  repo_.SetDefaultManifests(Rendered("sha", "Directory"));
  const json directory = Source({{"directory", json::object()}});
  std::vector<RenderResult> results;
  for (int i = 0; i < 5; ++i) {
    Ask(RequestFor("a", directory, absl::StrCat("sha-", i)), results);
    Ask(RequestFor("b", directory, absl::StrCat("sha-", i)), results);  // joins the same key
  }
  EXPECT_EQ(cache.in_flight(), 2);
  EXPECT_EQ(workers_.Pending(), 2U);
  EXPECT_EQ(cache.queued(), 3U);
  EXPECT_EQ(workers_.RunUntilIdleForTest(), 2);
  loop_.RunUntilIdleForTest();  // the two answers start the next two
  EXPECT_EQ(results.size(), 4U);
  EXPECT_EQ(cache.in_flight(), 2);
  EXPECT_EQ(cache.queued(), 1U);
  RunAll();
  EXPECT_EQ(results.size(), 10U);
  EXPECT_EQ(repo_.manifest_requests().size(), 5U);
  EXPECT_EQ(cache.in_flight(), 0);
  EXPECT_EQ(cache.queued(), 0U);
}

TEST_F(RenderCacheTest, ResolvesEachSourceAtMostOncePerIntervalAndAtOnceOnRefresh) {
  RenderCache& cache = Make(RenderCacheSettings{.resolve_interval = std::chrono::seconds(180)});
  repo_.SetRevision(
      "main", argocd_repo::ResolvedRevision{.revision = "sha-1", .ambiguous_revision = "main"});
  std::vector<RevisionResult> results;
  const auto ask = [&](const std::string& app, const json& source, bool refresh = false) {
    cache.Resolve(ResolveFor(app, source), refresh,
                  [&results](const RevisionResult& r) { results.push_back(r); });
  };
  // Many Applications on one (repoURL, targetRevision), at once: one call.
  for (int i = 0; i < 50; ++i) {
    ask(absl::StrCat("app", i), Source());
  }
  RunAll();
  ASSERT_EQ(results.size(), 50U);
  EXPECT_EQ(repo_.resolve_requests().size(), 1U);
  EXPECT_EQ(results[0].revision, "sha-1");

  // Within the interval: from the cache, whoever asks.
  repo_.SetRevision(
      "main", argocd_repo::ResolvedRevision{.revision = "sha-2", .ambiguous_revision = "main"});
  clock_.Advance(std::chrono::seconds(179));
  ask("app-x", Source());
  RunAll();
  EXPECT_EQ(repo_.resolve_requests().size(), 1U);
  EXPECT_EQ(results.back().revision, "sha-1");

  // A refresh asks at once.
  ask("app-x", Source(), /*refresh=*/true);
  RunAll();
  EXPECT_EQ(repo_.resolve_requests().size(), 2U);
  EXPECT_EQ(results.back().revision, "sha-2");

  // A failed resolve keeps the last good revision beside its error; the interval runs from it.
  repo_.SetRevision("main", absl::UnavailableError("repo-server down"));
  clock_.Advance(std::chrono::seconds(180));
  ask("app-x", Source());
  RunAll();
  EXPECT_EQ(repo_.resolve_requests().size(), 3U);
  EXPECT_EQ(results.back().revision, "sha-2");
  EXPECT_EQ(results.back().error.code(), absl::StatusCode::kUnavailable);
  ask("app-y", Source());
  RunAll();
  EXPECT_EQ(repo_.resolve_requests().size(), 3U);
  EXPECT_EQ(results.back().error.code(), absl::StatusCode::kUnavailable);

  // Another repository, or another targetRevision, is another source.
  repo_.SetRevision(
      "v1", argocd_repo::ResolvedRevision{.revision = "sha-v1", .ambiguous_revision = "v1"});
  ask("app-x", Source({{"targetRevision", "v1"}}));
  ask("app-x", Source({{"repoURL", "https://git.example/other.git"}, {"targetRevision", "v1"}}));
  RunAll();
  EXPECT_EQ(repo_.resolve_requests().size(), 5U);
  EXPECT_EQ(results.back().revision, "sha-v1");
  EXPECT_EQ(cache.revisions(), 3U);
}

TEST_F(RenderCacheTest, EntriesNobodyAskedForAreDropped) {
  RenderCache& cache = Make(RenderCacheSettings{.idle_ttl = std::chrono::minutes(15)});
  repo_.SetDefaultManifests(Rendered("sha", "Directory"));
  const json directory = Source({{"directory", json::object()}});
  std::vector<RenderResult> results;
  Ask(RequestFor("a", directory, "sha-1"), results);
  RunAll();
  clock_.Advance(std::chrono::minutes(10));
  Ask(RequestFor("a", directory, "sha-2"), results);
  RunAll();
  EXPECT_EQ(cache.renders(), 2U);
  clock_.Advance(std::chrono::minutes(6));  // sha-1 idle for 16 min, sha-2 for 6
  Ask(RequestFor("a", directory, "sha-2"), results);
  RunAll();
  EXPECT_EQ(cache.renders(), 1U);
  EXPECT_EQ(repo_.manifest_requests().size(), 2U);  // sha-2 still cached
  // The dropped key renders again when asked.
  Ask(RequestFor("a", directory, "sha-1"), results);
  RunAll();
  EXPECT_EQ(repo_.manifest_requests().size(), 3U);
  EXPECT_EQ(results.size(), 4U);
}

// The threading contract on started threads: asks on the loop, the call on a worker, every answer
// back on the loop thread.
TEST(RenderCacheThreadsTest, AnswersOnTheLoopThreadWithTheCallOnAWorker) {
  const Clock& clock = RealClock::Instance();
  Loop loop(clock, "test-loop");
  WorkerPool workers(clock, "test-workers", 2);
  argocd_repo::testing::FakeRepoServerClient repo;
  repo.SetDefaultManifests(Rendered("sha-1", "Directory"));
  RenderCache cache(
      RenderCache::Deps{.loop = loop, .workers = workers, .clock = clock, .client = repo}, {});
  loop.Start();
  workers.Start();
  constexpr int kAsks = 20;
  absl::Notification answered;
  int answers = 0;          // loop thread only
  bool all_on_loop = true;  // loop thread only
  loop.Post([&] {
    for (int i = 0; i < kAsks; ++i) {
      cache.Render(RequestFor(absl::StrCat("app", i), Source({{"directory", json::object()}})),
                   false, [&](const RenderResult& r) {
                     all_on_loop = all_on_loop && loop.IsLoopThread() && r.error.ok();
                     if (++answers == kAsks) {
                       answered.Notify();
                     }
                   });
    }
  });
  ASSERT_TRUE(answered.WaitForNotificationWithTimeout(absl::Seconds(60)));
  workers.Stop();  // first: its answers still reach the running loop
  loop.Stop();
  EXPECT_TRUE(all_on_loop);
  EXPECT_EQ(answers, kAsks);
  EXPECT_EQ(repo.manifest_requests().size(), 1U);
}

}  // namespace
}  // namespace mmi::dispatcher::manifests
