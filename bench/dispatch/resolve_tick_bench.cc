// resolve_tick_bench: what one manifests.resolveInterval tick costs the dispatcher's reconcile
// loop (issue 38; README.md "Resolve ticks"). N manifest-delivered Applications on S sources go
// through the real ManifestRenderer and RenderCache against the fake repo-server client; every
// on_changed is answered the way the reconciler answers it (Prepare() of that key again), all on
// this thread, timed by its CPU clock. After the cold renders, ticks with nothing new and one after
// a commit on every source that changes no rendered output are measured. Figures are printed,
// never asserted.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "bench/common/cpu_time.h"
#include "libs/argocd_repo/testing/fake_repo_server_client.h"
#include "libs/common/loop.h"
#include "libs/common/testing/fake_clock.h"
#include "nlohmann/json.hpp"
#include "services/dispatcher/manifests/delivery_mode.h"
#include "services/dispatcher/manifests/manifest_renderer.h"
#include "services/dispatcher/manifests/render_cache.h"

namespace mmi::dispatcher::manifests {
namespace {

using nlohmann::json;

json AppOf(int i, int sources) {
  const int source = i % sources;
  return {{"apiVersion", "argoproj.io/v1alpha1"},
          {"kind", "Application"},
          {"metadata",
           {{"name", "guestbook-" + std::to_string(i)},
            {"namespace", "argocd"},
            {"labels", {{kPullLabel, "true"}}},
            {"annotations",
             {{kClusterAnnotation, "cluster" + std::to_string(i)},
              {kDeliveryAnnotation, kDeliveryManifests}}}}},
          {"spec",
           {{"project", "default"},
            {"destination", {{"server", kInClusterServer}, {"namespace", "guestbook"}}},
            {"source",
             {{"repoURL", "https://git.example/app-" + std::to_string(source) + ".git"},
              {"path", "guestbook"},
              {"targetRevision", "main"}}}}}};
}

argocd_repo::RenderedManifests RenderedAt(const std::string& revision) {
  return {
      .manifests =
          {R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"ui","namespace":"guestbook"},"spec":{"replicas":2,"template":{"spec":{"containers":[{"name":"ui","image":"example/guestbook:v1"}]}}}})",
           R"({"apiVersion":"v1","kind":"Service","metadata":{"name":"ui","namespace":"guestbook"},"spec":{"ports":[{"port":80}]}})"},
      .revision = revision,
      .source_type = "Directory"};
}

struct Counts {
  uint64_t told = 0;      // on_changed calls
  uint64_t prepared = 0;  // decisions (Prepare calls)
  uint64_t asks = 0;      // RenderCache::Render asks (mmi_dispatcher_render_asks_total)
};

class Harness {
 public:
  Harness(int apps, int sources) {
    for (int i = 0; i < apps; ++i) {
      apps_.push_back(AppOf(i, sources));
      keys_.push_back("argocd/guestbook-" + std::to_string(i));
    }
    for (size_t i = 0; i < keys_.size(); ++i) {
      index_[keys_[i]] = i;
    }
  }

  void SetCommit(const std::string& sha) {
    repo_.SetRevision("main", argocd_repo::ResolvedRevision{
                                  .revision = sha, .ambiguous_revision = "main (" + sha + ")"});
    repo_.SetDefaultManifests(RenderedAt(sha));
  }

  // Decides every Application once (the cold start), then until nothing is left.
  void Cold() {
    for (size_t i = 0; i < keys_.size(); ++i) {
      Decide(i);
    }
    Drain();
  }

  // Lets `d` pass and runs what it brings, until nothing is left.
  void Pass(std::chrono::nanoseconds d) {
    clock_.Advance(d);
    Drain();
  }

  const Counts& counts() const { return counts_; }
  size_t resolves() const { return repo_.resolve_requests().size(); }
  size_t renders() const { return repo_.manifest_requests().size(); }

 private:
  void Decide(size_t i) {
    ++counts_.prepared;
    renderer_.Prepare(keys_[i], apps_[i], false, false);
  }
  void Drain() {
    while (true) {
      const int ran = workers_.RunUntilIdleForTest() + loop_.RunUntilIdleForTest();
      if (ran == 0 && told_.empty()) {
        return;
      }
      while (!told_.empty()) {
        const std::string key = std::move(told_.front());
        told_.pop_front();
        Decide(index_.at(key));
      }
    }
  }

  mmi::testing::FakeClock clock_;
  Loop loop_{clock_, "bench-loop"};
  WorkerPool workers_{clock_, "bench-workers", 1};
  argocd_repo::testing::FakeRepoServerClient repo_;
  Counts counts_;
  RenderCache cache_{RenderCache::Deps{.loop = loop_,
                                       .workers = workers_,
                                       .clock = clock_,
                                       .client = repo_,
                                       .on_ask = [this](std::string_view) { ++counts_.asks; }},
                     RenderCacheSettings{}};
  std::deque<std::string> told_;
  ManifestRenderer renderer_{ManifestRenderer::Deps{.cache = &cache_,
                                                    .loop = &loop_,
                                                    .on_changed =
                                                        [this](const std::string& key) {
                                                          ++counts_.told;
                                                          told_.push_back(key);
                                                        }},
                             [] {
                               ManifestRendererSettings settings;
                               settings.enabled = true;
                               return settings;
                             }()};
  std::vector<json> apps_;
  std::vector<std::string> keys_;
  absl::flat_hash_map<std::string, size_t> index_;
};

json Measure(Harness& h, const char* name, std::chrono::nanoseconds pass) {
  const Counts before = h.counts();
  const size_t resolves = h.resolves();
  const size_t renders = h.renders();
  const int64_t cpu = bench::ThreadCpuNs();
  h.Pass(pass);
  const double ms = static_cast<double>(bench::ThreadCpuNs() - cpu) / 1e6;
  const Counts& after = h.counts();
  json row = {{"tick", name},
              {"cpu_ms", ms},
              {"on_changed", after.told - before.told},
              {"decisions", after.prepared - before.prepared},
              {"render_asks", after.asks - before.asks},
              {"resolve_calls", h.resolves() - resolves},
              {"render_calls", h.renders() - renders}};
  std::printf("%s\n", row.dump().c_str());
  return row;
}

}  // namespace
}  // namespace mmi::dispatcher::manifests

int main(int argc, char** argv) {
  CLI::App cli{"resolve_tick_bench: the cost of one resolveInterval tick"};
  int apps = 30'000;
  int sources = 100;
  cli.add_option("--apps", apps, "manifest-delivered Applications");
  cli.add_option("--sources", sources, "distinct sources (repoURL) they share");
  CLI11_PARSE(cli, argc, argv);

  using mmi::dispatcher::manifests::Harness;
  using mmi::dispatcher::manifests::Measure;
  const auto interval = std::chrono::seconds(180);  // manifests.resolveInterval's default
  Harness h(apps, sources);
  h.SetCommit("sha-1");
  const int64_t cpu = mmi::bench::ThreadCpuNs();
  h.Cold();
  std::printf("{\"apps\":%d,\"sources\":%d,\"cold_cpu_ms\":%.1f}\n", apps, sources,
              static_cast<double>(mmi::bench::ThreadCpuNs() - cpu) / 1e6);
  Measure(h, "unchanged", interval);
  Measure(h, "unchanged", interval);
  h.SetCommit("sha-2");  // a commit on every source that renders the same manifests
  Measure(h, "new-commit-every-source", interval);
  Measure(h, "unchanged", interval);
  return 0;
}
