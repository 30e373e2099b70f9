// kube_bench: how fast libs/kube fills and reads a hub with N Argo CD Applications.
//
//   1. create N Applications (each with a realistic ~1.5 KB status) from C threads sharing one
//      HttpKubeClient (a pooled HTTP/2 connection per thread); or, with --seed-etcd, write them
//      straight into the API server's etcd in its storage format (the API server validates
//      each create against the Application CRD's large schema at ~170/s on 2 cores, so 300,000
//      creates take half an hour; what this benchmark measures is the list+watch side, which
//      goes through the real kube-apiserver either way);
//   2. start an Informer that drops status and managedFields, and time it to synced; report the
//      process RSS before and after (bytes per cached object);
//   3. update U objects and time until the informer has seen every update.
//
// Without --kubeconfig it starts its own etcd + kube-apiserver (tests/peers/bin/start-kube).
#include <curl/curl.h>
#include <malloc.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <thread>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "libs/common/clock.h"
#include "libs/common/log.h"
#include "libs/common/sleeper.h"
#include "libs/kube/http_kube_client.h"
#include "libs/kube/informer.h"
#include "libs/kube/rest_config.h"
#include "tests/support/peer.h"

namespace {

using mmi::kube::ObjectPtr;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

mmi::kube::ResourceRef Apps() { return {"argoproj.io", "v1alpha1", "applications", "argocd"}; }

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

int64_t RssBytes() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmRSS:", 0) == 0) {
      return std::stoll(line.substr(6)) * 1024;
    }
  }
  return 0;
}

json App(int i) {
  const std::string name = absl::StrCat("bench-", i);
  const std::string cluster = absl::StrCat("cluster-", i % 3000);
  json resources = json::array();
  for (int r = 0; r < 4; ++r) {
    resources.push_back({{"group", "apps"},
                         {"version", "v1"},
                         {"kind", "Deployment"},
                         {"namespace", "billing"},
                         {"name", absl::StrCat("component-", r)},
                         {"status", "Synced"},
                         {"health", {{"status", "Healthy"}}}});
  }
  return {{"apiVersion", "argoproj.io/v1alpha1"},
          {"kind", "Application"},
          {"metadata",
           {{"name", name},
            {"namespace", "argocd"},
            {"labels", {{"apps.open-cluster-management.io/pull-to-ocm-managed-cluster", "true"}}},
            {"annotations",
             {{"apps.open-cluster-management.io/ocm-managed-cluster", cluster},
              {"apps.open-cluster-management.io/ocm-managed-cluster-app-namespace", "argocd"},
              {"argocd.argoproj.io/skip-reconcile", "true"}}},
            {"finalizers", {"resources-finalizer.argocd.argoproj.io"}}}},
          {"spec",
           {{"project", "default"},
            {"source",
             {{"repoURL", "https://git.example.com/platform/billing.git"},
              {"targetRevision", "main"},
              {"path", "deploy/overlays/edge"}}},
            {"destination",
             {{"server", absl::StrCat("https://", cluster, "-control-plane")},
              {"namespace", "billing"}}},
            {"syncPolicy",
             {{"automated", {{"prune", true}, {"selfHeal", true}}},
              {"syncOptions", {"CreateNamespace=true"}}}}}},
          {"status",
           {{"sync",
             {{"status", "Synced"},
              {"revision", "8f3a2c1d9e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39"},
              {"comparedTo",
               {{"source",
                 {{"repoURL", "https://git.example.com/platform/billing.git"},
                  {"targetRevision", "main"},
                  {"path", "deploy/overlays/edge"}}},
                {"destination",
                 {{"server", "https://kubernetes.default.svc"}, {"namespace", "billing"}}}}}}},
            {"health", {{"status", "Healthy"}, {"lastTransitionTime", "2024-05-01T10:00:00Z"}}},
            {"resources", resources},
            {"reconciledAt", "2024-05-01T10:02:00Z"},
            {"sourceType", "Kustomize"},
            {"summary", {{"images", {"registry.example.com/billing:1.4.2"}}}},
            {"controllerNamespace", "argocd"}}}};
}

// Counts informer events; Wait() until a target is reached.
class Counter final : public mmi::kube::InformerHandler {
 public:
  void OnAdd(const ObjectPtr&, bool) override {}
  void OnUpdate(const ObjectPtr&, const ObjectPtr&) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++updates_;
    cv_.notify_all();
  }
  void OnDelete(const ObjectPtr&) override {}
  bool WaitForUpdates(int64_t n, std::chrono::seconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return updates_ >= n; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int64_t updates_ = 0;
};

// The Application as kube-apiserver stores a custom resource in etcd: JSON under
// <prefix>/<group>/<resource>/<namespace>/<name>, without resourceVersion (the etcd revision is).
json StoredApp(int i) {
  json app = App(i);
  auto& meta = app["metadata"];
  meta["uid"] = absl::StrFormat("00000000-0000-4000-8000-%012d", i);
  meta["creationTimestamp"] = "2024-05-01T10:00:00Z";
  meta["generation"] = 1;
  return app;
}

// One etcd v3 gateway PUT (HTTP/JSON, base64 key and value) on a reused curl handle.
absl::Status EtcdPut(CURL* curl, const std::string& endpoint, const std::string& key,
                     const std::string& value, std::atomic<int64_t>& max_revision) {
  const std::string body =
      json{{"key", absl::Base64Escape(key)}, {"value", absl::Base64Escape(value)}}.dump();
  const std::string url = endpoint + "/v3/kv/put";
  std::string response;
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.c_str());
  curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  curl_easy_setopt(
      curl, CURLOPT_WRITEFUNCTION, +[](char* data, size_t size, size_t n, void* out) {
        static_cast<std::string*>(out)->append(data, size * n);
        return size * n;
      });
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &response);
  const CURLcode rc = curl_easy_perform(curl);
  if (rc != CURLE_OK) {
    return absl::UnavailableError(absl::StrCat("etcd put: ", curl_easy_strerror(rc)));
  }
  long code = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
  if (code != 200) {
    return absl::UnavailableError(absl::StrCat("etcd put: HTTP ", code, ": ", response));
  }
  // {"header":{"revision":"123",...}}: int64 values are strings in the gateway's JSON.
  const json reply = json::parse(response, nullptr, /*allow_exceptions=*/false);
  if (reply.is_object() && reply.contains("header") && reply["header"].contains("revision")) {
    const int64_t revision = std::stoll(reply["header"]["revision"].get<std::string>());
    int64_t seen = max_revision.load();
    while (revision > seen && !max_revision.compare_exchange_weak(seen, revision)) {
    }
  }
  return absl::OkStatus();
}

// Runs `op(i)` for i in [0, n) on `threads` threads; returns the number of failures.
int64_t Parallel(int n, int threads, const std::function<absl::Status(int)>& op) {
  std::atomic<int> next{0};
  std::atomic<int64_t> failures{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (int i = next++; i < n; i = next++) {
        const absl::Status s = op(i);
        if (!s.ok() && !absl::IsAlreadyExists(s)) {
          if (failures++ < 5) {
            std::cerr << "  failure: " << s << "\n";
          }
        }
      }
    });
  }
  for (auto& t : pool) {
    t.join();
  }
  return failures.load();
}

// The command line.
struct BenchOptions {
  int count = 300'000;
  int concurrency = 32;
  int updates = 10'000;
  bool skip_create = false;
  bool keep_status = false;
  bool compact = false;
  bool keep_peer = false;
  bool seed_etcd = false;
  std::string etcd_endpoint;
  int64_t page_size = 500;
  std::string kubeconfig;
};

void AddOptions(CLI::App& app, BenchOptions& o) {
  app.add_option("--count", o.count, "Applications to create (default 300000)");
  app.add_option("--concurrency", o.concurrency, "creating threads (one connection each)");
  app.add_option("--updates", o.updates, "objects to update after the sync (0 = skip)");
  app.add_option("--page-size", o.page_size, "LIST page size for the informer");
  app.add_option("--kubeconfig", o.kubeconfig, "use this cluster instead of starting a peer");
  app.add_flag("--skip-create", o.skip_create, "the Applications already exist");
  app.add_flag("--keep-status", o.keep_status, "cache status too (to compare memory)");
  app.add_flag("--compact", o.compact, "InformerSettings::compact_storage (MessagePack entries)");
  app.add_flag("--keep-peer", o.keep_peer, "leave the started peer running");
  app.add_flag("--seed-etcd", o.seed_etcd,
               "write the Applications into etcd directly (storage format) instead of creating "
               "them through the API server");
  app.add_option("--etcd-endpoint", o.etcd_endpoint,
                 "etcd client URL for --seed-etcd with --kubeconfig (default: the started peer's)");
}

// Objects written behind the API server's back reach its watch cache through its etcd watch; a
// hub whose Applications were created over days has long digested them. Waits until the cache
// (a list with resourceVersion=0 is served from it) has caught up, so the sync measures a
// settled API server rather than one still ingesting 300K events.
bool WaitForWatchCache(mmi::kube::KubeClient& client, int count, int64_t last_revision) {
  const auto t_settle = Clock::now();
  while (true) {
    mmi::kube::ListOptions probe;  // resourceVersion=0: served from the watch cache
    probe.resource_version = "0";
    probe.field_selector = absl::StrCat("metadata.name=bench-", count - 1);
    auto page = client.List(Apps(), probe);
    if (page.ok() && !page->items.empty()) {
      break;
    }
    if (Clock::now() - t_settle > std::chrono::minutes(20)) {
      std::cerr << "the API server's watch cache did not catch up with etcd" << std::endl;
      return false;
    }
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  std::cout << "settle: the API server's watch cache caught up with etcd (revision "
            << last_revision << ") " << Seconds(Clock::now() - t_settle)
            << " s after the last write" << std::endl;
  return true;
}

// Writes the Applications into etcd behind the API server, then waits for its watch cache.
bool SeedEtcd(mmi::kube::KubeClient& client, const BenchOptions& o) {
  if (o.etcd_endpoint.empty()) {
    std::cerr << "--seed-etcd needs --etcd-endpoint with --kubeconfig" << std::endl;
    return false;
  }
  const int count = o.count;
  const auto t0 = Clock::now();
  std::vector<CURL*> handles(static_cast<size_t>(o.concurrency));
  for (auto& h : handles) {
    h = curl_easy_init();
  }
  std::atomic<int> slot{0};
  std::atomic<int64_t> last_revision{0};
  thread_local int my_slot = -1;
  auto put = [&](CURL* curl, int i) {
    const json stored = StoredApp(i);
    const std::string key = absl::StrCat("/registry/argoproj.io/applications/argocd/",
                                         stored["metadata"]["name"].get<std::string>());
    return EtcdPut(curl, o.etcd_endpoint, key, stored.dump(), last_revision);
  };
  // Every Application but the last in parallel; the last alone, after them: it has the highest
  // etcd revision, so once the API server's watch cache shows it, the cache holds them all.
  int64_t failures = Parallel(count - 1, o.concurrency, [&](int i) {
    if (my_slot < 0) {
      my_slot = slot++;
    }
    return put(handles[static_cast<size_t>(my_slot)], i);
  });
  if (!put(handles[0], count - 1).ok()) {
    ++failures;
  }
  for (auto* h : handles) {
    curl_easy_cleanup(h);
  }
  const double secs = Seconds(Clock::now() - t0);
  std::cout << "seed: " << count << " Applications written to etcd in " << secs << " s ("
            << static_cast<int64_t>(count / secs) << "/s), failures: " << failures << std::endl;
  return WaitForWatchCache(client, count, last_revision.load());
}

// Creates the Applications through the API server, reporting progress every 30 s.
void CreateApps(mmi::kube::KubeClient& client, const BenchOptions& o) {
  const auto t0 = Clock::now();
  std::atomic<int> done{0};
  std::mutex progress_mu;
  std::condition_variable progress_cv;
  bool finished = false;
  std::thread progress([&] {
    std::unique_lock<std::mutex> lock(progress_mu);
    while (!progress_cv.wait_for(lock, std::chrono::seconds(30), [&] { return finished; })) {
      std::cout << "  created " << done.load() << " in " << Seconds(Clock::now() - t0) << " s"
                << std::endl;
    }
  });
  const int64_t failures = Parallel(o.count, o.concurrency, [&](int i) {
    absl::Status s = client.Create(Apps(), App(i), {}).status();
    ++done;
    return s;
  });
  const double secs = Seconds(Clock::now() - t0);
  {
    std::lock_guard<std::mutex> lock(progress_mu);
    finished = true;
  }
  progress_cv.notify_all();
  progress.join();
  std::cout << "create: " << o.count << " Applications in " << secs << " s ("
            << static_cast<int64_t>(o.count / secs) << "/s, " << o.concurrency
            << " threads), failures: " << failures << std::endl;
}

// Starts the informer and reports its sync time and memory; false when it does not sync.
// `rss_before`: the resident size before the informer was made.
bool MeasureSync(mmi::kube::Informer& informer, const BenchOptions& o, int64_t rss_before) {
  const auto t1 = Clock::now();
  informer.Start();
  if (!informer.WaitForSynced(std::chrono::minutes(30))) {
    std::cerr << "informer did not sync" << std::endl;
    return false;
  }
  const double sync_secs = Seconds(Clock::now() - t1);
  malloc_trim(0);
  const int64_t rss_after = RssBytes();
  const size_t cached = informer.Size();
  std::cout << "sync: " << cached << " objects in " << sync_secs << " s (page size " << o.page_size
            << ", " << (o.keep_status ? "status kept" : "status and managedFields dropped")
            << (o.compact ? ", compact storage" : ", json trees") << ")\n"
            << "rss: " << rss_before / (1 << 20) << " MiB before, " << rss_after / (1 << 20)
            << " MiB synced, "
            << (cached > 0 ? (rss_after - rss_before) / static_cast<int64_t>(cached) : 0)
            << " bytes per cached object" << std::endl;
  return true;
}

// Patches `n` Applications and reports when the informer has seen every change.
void MeasureUpdates(mmi::kube::KubeClient& client, Counter& counter, int n, int concurrency) {
  const auto t2 = Clock::now();
  // A value no earlier run wrote, so every patch is a real change and yields an event.
  const std::string revision =
      absl::StrCat("release-", std::chrono::system_clock::now().time_since_epoch().count());
  const int64_t failures = Parallel(n, concurrency, [&](int i) {
    const json patch = {{"spec", {{"source", {{"targetRevision", revision}}}}}};
    return client
        .Patch(Apps(), absl::StrCat("bench-", i), mmi::kube::PatchType::kMerge, patch, {}, "")
        .status();
  });
  const double write_secs = Seconds(Clock::now() - t2);
  const bool seen = counter.WaitForUpdates(n - failures, std::chrono::minutes(10));
  const double seen_secs = Seconds(Clock::now() - t2);
  std::cout << "update: " << n << " merge patches in " << write_secs << " s ("
            << static_cast<int64_t>(n / write_secs) << "/s), all seen by the informer after "
            << seen_secs << " s" << (seen ? "" : " (TIMED OUT)") << ", failures: " << failures
            << std::endl;
}

// Starts etcd + kube-apiserver (when --kubeconfig names no cluster); fills in kubeconfig and the
// etcd endpoint.
absl::StatusOr<std::unique_ptr<mmi::testing::PeerProcess>> StartPeer(BenchOptions& o) {
  std::cout << "starting etcd + kube-apiserver ..." << std::endl;
  auto started = mmi::testing::PeerProcess::Start("kube", {"ROLE=hub"});
  if (!started.ok()) {
    return started.status();
  }
  std::unique_ptr<mmi::testing::PeerProcess> peer = std::move(*started);
  o.kubeconfig = peer->Get("KUBECONFIG");
  if (o.etcd_endpoint.empty()) {
    o.etcd_endpoint = peer->Get("ETCD_ENDPOINT");
  }
  std::cout << "peer data: " << peer->data_dir() << std::endl;
  return peer;
}

void StopPeer(std::unique_ptr<mmi::testing::PeerProcess> peer, bool keep_peer) {
  if (peer && !keep_peer) {
    const std::string dir = peer->data_dir();
    peer->Stop();
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  } else if (peer) {
    std::cout << "peer left running: tests/peers/bin/stop " << peer->data_dir() << std::endl;
    (void)peer.release();  // deliberately not destroyed: the destructor would stop the peer
  }
}

absl::StatusOr<std::unique_ptr<mmi::kube::HttpKubeClient>> MakeClient(const BenchOptions& o) {
  auto rest = mmi::kube::LoadKubeconfigFiles({o.kubeconfig});
  if (!rest.ok()) {
    return rest.status();
  }
  mmi::kube::HttpKubeClientSettings settings;
  settings.rest = *rest;
  settings.rate_limit.qps = 0;  // client-side limiting off: measure the server, APF protects it
  settings.max_idle_connections = static_cast<size_t>(o.concurrency) + 8;
  return mmi::kube::HttpKubeClient::Create(settings, mmi::RealClock::Instance(),
                                           mmi::RealSleeper::Instance(), nullptr);
}

int Run(int argc, char** argv) {
  CLI::App app{"libs/kube benchmark against a real kube-apiserver"};
  BenchOptions o;
  AddOptions(app, o);
  CLI11_PARSE(app, argc, argv);
  mmi::log::SetMinLevel(mmi::log::Level::kWarn);

  std::unique_ptr<mmi::testing::PeerProcess> peer;
  if (o.kubeconfig.empty()) {
    auto started = StartPeer(o);
    if (!started.ok()) {
      std::cerr << started.status() << std::endl;
      return 1;
    }
    peer = std::move(*started);
  }
  auto client = MakeClient(o);
  if (!client.ok()) {
    std::cerr << client.status() << std::endl;
    return 1;
  }
  std::cout << "object size: " << App(0).dump().size() << " bytes of JSON (with status)\n";
  if (!o.skip_create && o.seed_etcd) {
    if (!SeedEtcd(**client, o)) {
      return 1;
    }
  } else if (!o.skip_create) {
    CreateApps(**client, o);
  }

  malloc_trim(0);
  const int64_t rss_before = RssBytes();
  mmi::kube::InformerSettings informer_settings;
  informer_settings.resource = Apps();
  informer_settings.page_size = o.page_size;
  informer_settings.compact_storage = o.compact;
  if (!o.keep_status) {
    informer_settings.transform = mmi::kube::DropFields({"/status", "/metadata/managedFields"});
  }
  mmi::kube::Informer informer(**client, mmi::RealClock::Instance(), informer_settings, nullptr);
  Counter counter;
  informer.AddHandler(counter);
  if (!MeasureSync(informer, o, rss_before)) {
    return 1;
  }
  if (o.updates > 0) {
    const int n = std::min<int>(o.updates, static_cast<int>(informer.Size()));
    MeasureUpdates(**client, counter, n, o.concurrency);
  }
  informer.Stop();
  StopPeer(std::move(peer), o.keep_peer);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "kube_bench: " << e.what() << std::endl;
    return 1;
  }
}
