// libs/kube against a real etcd + kube-apiserver (hub role: Argo CD Application CRD installed,
// namespaces argocd and open-cluster-management exist). Each test starts its own peer.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "libs/common/clock.h"
#include "libs/common/log.h"
#include "libs/common/sleeper.h"
#include "libs/kube/errors.h"
#include "libs/kube/http_kube_client.h"
#include "libs/kube/informer.h"
#include "libs/kube/internal/curl_transport.h"
#include "libs/kube/rest_config.h"
#include "prometheus/registry.h"
#include "tests/support/peer.h"
#include "tests/support/wait.h"

extern char** environ;

namespace mmi::kube {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;

ResourceRef Apps() { return {"argoproj.io", "v1alpha1", "applications", "argocd"}; }
ResourceRef Leases() { return {"coordination.k8s.io", "v1", "leases", "open-cluster-management"}; }

json App(const std::string& name, const std::string& revision = "HEAD") {
  return {{"apiVersion", "argoproj.io/v1alpha1"},
          {"kind", "Application"},
          {"metadata",
           {{"name", name},
            {"namespace", "argocd"},
            {"labels", {{"apps.open-cluster-management.io/pull-to-ocm-managed-cluster", "true"}}},
            {"annotations", {{"apps.open-cluster-management.io/ocm-managed-cluster", "c1"}}}}},
          {"spec",
           {{"project", "default"},
            {"source",
             {{"repoURL", "https://github.com/argoproj/argocd-example-apps"},
              {"path", "guestbook"},
              {"targetRevision", revision}}},
            {"destination",
             {{"server", "https://kubernetes.default.svc"}, {"namespace", "guestbook"}}}}}};
}

std::unique_ptr<HttpKubeClient> MakeClient(const RestConfig& rest,
                                           prometheus::Registry* registry = nullptr) {
  HttpKubeClientSettings settings;
  settings.rest = rest;
  settings.rate_limit.qps = 0;  // rely on APF, like controller-runtime >= 0.21
  settings.retry.backoff = {
      .initial = milliseconds(100), .max = milliseconds(1000), .multiplier = 2, .jitter = 0.2};
  auto client =
      HttpKubeClient::Create(settings, RealClock::Instance(), RealSleeper::Instance(), registry);
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? std::move(*client) : nullptr;
}

std::unique_ptr<HttpKubeClient> ClientFor(const testing::PeerProcess& hub,
                                          prometheus::Registry* registry = nullptr) {
  auto rest = LoadKubeconfigFiles({hub.Get("KUBECONFIG")});
  EXPECT_TRUE(rest.ok()) << rest.status();
  return rest.ok() ? MakeClient(*rest, registry) : nullptr;
}

// Repeats `op` until it succeeds or `timeout` passes (the API server may be restarting).
absl::Status Eventually(const std::function<absl::Status()>& op,
                        std::chrono::milliseconds timeout = seconds(90)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  absl::Status status;
  while (true) {
    status = op();
    if (status.ok() || std::chrono::steady_clock::now() > deadline) {
      return status;
    }
    std::this_thread::sleep_for(milliseconds(100));
  }
}

class KubeClientTest : public ::testing::Test {
 protected:
  KubeClientTest() { log::SetMinLevel(log::Level::kWarn); }
};

TEST_F(KubeClientTest, ConnectsWithInlineKubeconfigCertFilesAndTokenFileOverHttp2) {
  MMI_START_PEER(hub, "kube", {"ROLE=hub"});

  // 1. The peer's kubeconfig: CA, client certificate and key embedded as base64 data.
  auto from_kubeconfig = ClientFor(*hub);
  ASSERT_NE(from_kubeconfig, nullptr);
  auto ns = from_kubeconfig->Get(ResourceRef{"", "v1", "namespaces", ""}, "argocd");
  ASSERT_TRUE(ns.ok()) << ns.status();
  EXPECT_EQ((*ns)["kind"], "Namespace");

  // 2. Certificate files.
  RestConfig files;
  files.server = hub->Get("KUBE_API_URL");
  files.tls.ca_file = hub->Get("KUBE_CA_FILE");
  files.tls.cert_file = hub->Get("KUBE_CLIENT_CERT_FILE");
  files.tls.key_file = hub->Get("KUBE_CLIENT_KEY_FILE");
  auto by_files = MakeClient(files)->List(Apps(), {});
  ASSERT_TRUE(by_files.ok()) << by_files.status();

  // 3. A bearer token read from a file (as in a pod), and a wrong one.
  const std::string token_file = hub->data_dir() + "/sa-token";
  std::ofstream(token_file) << hub->Get("KUBE_TOKEN") << "\n";
  RestConfig token;
  token.server = hub->Get("KUBE_API_URL");
  token.tls.ca_file = hub->Get("KUBE_CA_FILE");
  token.bearer_token_file = token_file;
  auto by_token = MakeClient(token)->List(Apps(), {});
  ASSERT_TRUE(by_token.ok()) << by_token.status();
  token.bearer_token_file.clear();
  token.bearer_token = "not-a-valid-token";
  EXPECT_EQ(MakeClient(token)->List(Apps(), {}).status().code(),
            absl::StatusCode::kUnauthenticated);

  // 4. The wire protocol is HTTP/2 (ALPN h2).
  internal::CurlTransportSettings transport_settings;
  transport_settings.server = files.server;
  transport_settings.tls = files.tls;
  auto transport = internal::CurlTransport::Create(transport_settings, RealClock::Instance());
  ASSERT_TRUE(transport.ok()) << transport.status();
  internal::HttpRequest version;
  version.method = "GET";
  version.path = "/version";
  auto response = (*transport)->Send(version);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->http_version, 2);
  EXPECT_THAT(response->body, HasSubstr("gitVersion"));
}

TEST_F(KubeClientTest, CrudErrorsAndPreconditionsBehaveAsTheApiServerDefines) {
  MMI_START_PEER(hub, "kube", {"ROLE=hub"});
  prometheus::Registry registry;
  auto client = ClientFor(*hub, &registry);
  ASSERT_NE(client, nullptr);

  auto created = client->Create(Apps(), App("crud"), {});
  ASSERT_TRUE(created.ok()) << created.status();
  const std::string uid = (*created)["metadata"]["uid"];
  const std::string rv1 = ResourceVersionOf(*created);
  EXPECT_EQ(client->Create(Apps(), App("crud"), {}).status().code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(client->Get(Apps(), "missing").status().code(), absl::StatusCode::kNotFound);

  // Update guarded by resourceVersion: the second writer with the old version loses.
  json first = *created;
  first["spec"]["source"]["targetRevision"] = "v1";
  auto updated = client->Update(Apps(), first, {});
  ASSERT_TRUE(updated.ok()) << updated.status();
  json stale = *created;
  stale["spec"]["source"]["targetRevision"] = "v2";
  const auto conflict = client->Update(Apps(), stale, {});
  EXPECT_TRUE(IsConflict(conflict.status())) << conflict.status();
  EXPECT_THAT(std::string(conflict.status().message()), HasSubstr("the object has been modified"));

  // JSON patch with a `test` on the resourceVersion: the precise optimistic update.
  const json guarded =
      json::array({{{"op", "test"}, {"path", "/metadata/resourceVersion"}, {"value", rv1}},
                   {{"op", "replace"}, {"path", "/spec/project"}, {"value", "other"}}});
  EXPECT_EQ(client->Patch(Apps(), "crud", PatchType::kJson, guarded, {}, "").status().code(),
            absl::StatusCode::kInvalidArgument);
  // Merge patch carrying a stale resourceVersion is conditional too.
  const json stale_merge = {{"metadata", {{"resourceVersion", rv1}}},
                            {"spec", {{"project", "other"}}}};
  EXPECT_TRUE(
      IsConflict(client->Patch(Apps(), "crud", PatchType::kMerge, stale_merge, {}, "").status()));
  // Strategic merge is not available for custom resources (415).
  EXPECT_EQ(client->Patch(Apps(), "crud", PatchType::kStrategicMerge, json::object(), {}, "")
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  // Schema validation (422) names the field.
  json invalid = App("invalid");
  invalid["spec"].erase("destination");
  const auto rejected = client->Create(Apps(), invalid, {});
  EXPECT_EQ(rejected.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(rejected.status().message()), HasSubstr("destination"));

  // Delete preconditions: a wrong uid is a conflict; the right one deletes.
  DeleteOptions wrong;
  wrong.precondition_uid = "00000000-0000-0000-0000-000000000000";
  EXPECT_TRUE(IsConflict(client->Delete(Apps(), "crud", wrong)));
  DeleteOptions right;
  right.precondition_uid = uid;
  right.propagation_policy = PropagationPolicy::kBackground;
  ASSERT_TRUE(client->Delete(Apps(), "crud", right).ok());
  EXPECT_EQ(client->Delete(Apps(), "crud", {}).code(), absl::StatusCode::kNotFound);

  // Metrics named like controller-runtime's.
  bool saw_conflict_metric = false;
  for (const auto& family : registry.Collect()) {
    if (family.name != "rest_client_requests_total") {
      continue;
    }
    for (const auto& metric : family.metric) {
      std::map<std::string, std::string> labels;
      for (const auto& l : metric.label) {
        labels[l.name] = l.value;
      }
      saw_conflict_metric |=
          labels["code"] == "409" && labels["method"] == "PUT" && metric.counter.value >= 1;
    }
  }
  EXPECT_TRUE(saw_conflict_metric);
}

TEST_F(KubeClientTest, ServerSideApplyConflictsAndForceFollowTheApiServer) {
  MMI_START_PEER(hub, "kube", {"ROLE=hub"});
  auto client = ClientFor(*hub);
  ASSERT_NE(client, nullptr);
  PatchOptions alice;
  alice.field_manager = "alice";
  PatchOptions bob;
  bob.field_manager = "bob";

  json intent = App("ssa");
  intent["metadata"].erase("labels");
  intent["spec"]["project"] = "alice-project";
  auto applied = client->Patch(Apps(), "ssa", PatchType::kApply, intent, alice, "");
  ASSERT_TRUE(applied.ok()) << applied.status();  // apply creates the object
  EXPECT_EQ((*applied)["spec"]["project"], "alice-project");

  // Bob applies a different value for a field Alice owns: 409 naming the field and owner.
  const json bob_intent = {{"apiVersion", "argoproj.io/v1alpha1"},
                           {"kind", "Application"},
                           {"metadata", {{"name", "ssa"}, {"namespace", "argocd"}}},
                           {"spec", {{"project", "bob-project"}}}};
  const auto conflict = client->Patch(Apps(), "ssa", PatchType::kApply, bob_intent, bob, "");
  EXPECT_TRUE(IsConflict(conflict.status())) << conflict.status();
  EXPECT_THAT(std::string(conflict.status().message()), HasSubstr(".spec.project"));
  EXPECT_THAT(std::string(conflict.status().message()), HasSubstr("alice"));
  EXPECT_EQ((*client->Get(Apps(), "ssa"))["spec"]["project"], "alice-project");

  // With force, Bob takes ownership.
  bob.force = true;
  auto forced = client->Patch(Apps(), "ssa", PatchType::kApply, bob_intent, bob, "");
  ASSERT_TRUE(forced.ok()) << forced.status();
  EXPECT_EQ((*forced)["spec"]["project"], "bob-project");
  std::map<std::string, std::string> owners;  // manager -> managed fields JSON
  for (const auto& entry : (*forced)["metadata"]["managedFields"]) {
    owners[entry["manager"]] = entry["fieldsV1"].dump();
  }
  ASSERT_TRUE(owners.count("bob"));
  EXPECT_THAT(owners["bob"], HasSubstr("f:project"));
  EXPECT_THAT(owners["alice"], ::testing::Not(HasSubstr("f:project")));

  // Apply is declarative per manager: Alice drops spec.source.path from her intent and the
  // field goes away (nobody else owns it); her other fields stay.
  json smaller = intent;
  smaller["spec"].erase("project");  // no longer hers
  smaller["spec"]["source"].erase("path");
  auto reapplied = client->Patch(Apps(), "ssa", PatchType::kApply, smaller, alice, "");
  ASSERT_TRUE(reapplied.ok()) << reapplied.status();
  EXPECT_FALSE((*reapplied)["spec"]["source"].contains("path"));
  EXPECT_EQ((*reapplied)["spec"]["source"]["repoURL"], intent["spec"]["source"]["repoURL"]);
  EXPECT_EQ((*reapplied)["spec"]["project"], "bob-project");
}

TEST_F(KubeClientTest, MergePatchOfApplicationStatusGoesThroughTheMainResource) {
  MMI_START_PEER(hub, "kube", {"ROLE=hub"});
  auto client = ClientFor(*hub);
  ASSERT_NE(client, nullptr);
  auto created = client->Create(Apps(), App("status"), {});
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ((*created)["metadata"]["generation"], 1);

  const json status = {{"status",
                        {{"sync", {{"status", "Synced"}, {"revision", "abc123"}}},
                         {"health", {{"status", "Healthy"}}},
                         {"reconciledAt", "2024-01-01T00:00:00Z"}}}};
  auto patched = client->Patch(Apps(), "status", PatchType::kMerge, status, {}, "");
  ASSERT_TRUE(patched.ok()) << patched.status();
  EXPECT_EQ((*patched)["status"]["health"]["status"], "Healthy");
  // No status subresource: a status write bumps generation like a spec change.
  EXPECT_EQ((*patched)["metadata"]["generation"], 2);

  // null deletes a key (RFC 7386); other keys stay.
  auto trimmed = client->Patch(Apps(), "status", PatchType::kMerge,
                               {{"status", {{"reconciledAt", nullptr}}}}, {}, "");
  ASSERT_TRUE(trimmed.ok()) << trimmed.status();
  EXPECT_FALSE((*trimmed)["status"].contains("reconciledAt"));
  EXPECT_EQ((*client->Get(Apps(), "status"))["status"]["sync"]["revision"], "abc123");

  // There is no /status endpoint for Applications.
  EXPECT_EQ(
      client->Patch(Apps(), "status", PatchType::kMerge, status, {}, "status").status().code(),
      absl::StatusCode::kNotFound);
}

TEST_F(KubeClientTest, ConcurrentCreatesShareTheClientAndPagedListsSeeThemAll) {
  MMI_START_PEER(hub, "kube", {"ROLE=hub"});
  auto client = ClientFor(*hub);
  ASSERT_NE(client, nullptr);
  constexpr int kThreads = 16;
  constexpr int kPerThread = 25;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        json app = App(absl::StrCat("c-", t, "-", i));
        if (i % 2 == 0) {
          app["metadata"]["labels"]["parity"] = "even";
        }
        if (!client->Create(Apps(), app, {}).ok()) {
          ++failures;
        }
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  EXPECT_EQ(failures.load(), 0);
  ListOptions paged;
  paged.limit = 7;
  auto all = ListAll(*client, Apps(), paged);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->items.size(), static_cast<size_t>(kThreads * kPerThread));
  ListOptions even;
  even.label_selector = "parity=even";
  even.limit = 50;
  auto evens = ListAll(*client, Apps(), even);
  ASSERT_TRUE(evens.ok()) << evens.status();
  EXPECT_EQ(evens->items.size(), static_cast<size_t>(kThreads * ((kPerThread + 1) / 2)));
  ListOptions by_name;
  by_name.field_selector = "metadata.name=c-3-4";
  auto one = client->List(Apps(), by_name);
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(one->items.size(), 1u);
}

// Mirrors the informer's callbacks: name -> resourceVersion.
class Mirror final : public InformerHandler {
 public:
  // Blocks the first OnAdd until Open(): a slow handler while the informer replaces its cache.
  void Gate() { gated_ = true; }
  void Open() { gated_ = false; }
  bool Waiting() const { return waiting_; }
  void OnAdd(const ObjectPtr& o, bool) override {
    while (gated_) {
      waiting_ = true;
      std::this_thread::sleep_for(milliseconds(5));
    }
    Set(*o);
  }
  void OnUpdate(const ObjectPtr&, const ObjectPtr& o) override { Set(*o); }
  void OnDelete(const ObjectPtr& o) override {
    std::lock_guard<std::mutex> lock(mu_);
    state_.erase((*o)["metadata"]["name"].get<std::string>());
    ++deletes_;
  }
  std::map<std::string, std::string> State() const {
    std::lock_guard<std::mutex> lock(mu_);
    return state_;
  }
  int Deletes() const {
    std::lock_guard<std::mutex> lock(mu_);
    return deletes_;
  }

 private:
  void Set(const json& o) {
    std::lock_guard<std::mutex> lock(mu_);
    state_[o["metadata"]["name"].get<std::string>()] = ResourceVersionOf(o);
  }
  mutable std::mutex mu_;
  std::map<std::string, std::string> state_;
  int deletes_ = 0;
  std::atomic<bool> gated_{false};
  std::atomic<bool> waiting_{false};
};

std::map<std::string, std::string> ServerState(KubeClient& client) {
  ListOptions options;
  options.limit = 100;
  auto all = ListAll(client, Apps(), options);
  std::map<std::string, std::string> state;
  if (!all.ok()) {
    return state;
  }
  for (const auto& item : all->items) {
    state[item["metadata"]["name"]] = ResourceVersionOf(item);
  }
  return state;
}

std::map<std::string, std::string> CacheState(const Informer& informer) {
  std::map<std::string, std::string> state;
  for (const auto& o : informer.List()) {
    state[(*o)["metadata"]["name"]] = ResourceVersionOf(*o);
  }
  return state;
}

std::string Diff(const std::map<std::string, std::string>& want,
                 const std::map<std::string, std::string>& got) {
  std::string out;
  int shown = 0;
  for (const auto& [k, v] : want) {
    auto it = got.find(k);
    if ((it == got.end() || it->second != v) && shown++ < 10) {
      absl::StrAppend(&out, " ", k, "@", v, "->", it == got.end() ? "missing" : it->second);
    }
  }
  for (const auto& [k, v] : got) {
    if (!want.count(k) && shown++ < 20) {
      absl::StrAppend(&out, " extra:", k, "@", v);
    }
  }
  return out;
}

// Creates, updates and deletes objects; each operation is retried through outages.
struct Churn {
  KubeClient& client;
  int round = 0;

  absl::Status Run(int creates, int updates, int deletes) {
    ++round;
    std::map<std::string, std::string> state = ServerState(client);
    std::vector<std::string> names;
    for (const auto& [name, rv] : state) {
      names.push_back(name);
    }
    for (int i = 0; i < updates && i < static_cast<int>(names.size()); ++i) {
      const std::string name = names[static_cast<size_t>(i) * 3 % names.size()];
      absl::Status s = Eventually([&] {
        auto current = client.Get(Apps(), name);
        if (absl::IsNotFound(current.status())) {
          return absl::OkStatus();
        }
        if (!current.ok()) {
          return current.status();
        }
        (*current)["spec"]["source"]["targetRevision"] = absl::StrCat("round-", round);
        return client.Update(Apps(), *current, {}).status();
      });
      if (!s.ok()) {
        return s;
      }
    }
    for (int i = 0; i < deletes && i < static_cast<int>(names.size()); ++i) {
      const std::string name = names[names.size() - 1 - static_cast<size_t>(i)];
      absl::Status s = Eventually([&] {
        absl::Status d = client.Delete(Apps(), name, {});
        return absl::IsNotFound(d) ? absl::OkStatus() : d;
      });
      if (!s.ok()) {
        return s;
      }
    }
    for (int i = 0; i < creates; ++i) {
      absl::Status s = Eventually([&] {
        absl::Status c = client.Create(Apps(), App(absl::StrCat("r", round, "-", i)), {}).status();
        return absl::IsAlreadyExists(c) ? absl::OkStatus() : c;
      });
      if (!s.ok()) {
        return s;
      }
    }
    return absl::OkStatus();
  }
};

TEST_F(KubeClientTest, InformerSurvivesApiServerRestartAndEtcdCompactionWithoutMissingState) {
  MMI_START_PEER(hub, "kube", {"ROLE=hub"});
  auto client = ClientFor(*hub);
  ASSERT_NE(client, nullptr);
  Churn churn{*client};
  ASSERT_TRUE(churn.Run(/*creates=*/200, 0, 0).ok());

  prometheus::Registry registry;
  InformerSettings settings;
  settings.resource = Apps();
  settings.page_size = 50;
  settings.min_watch_timeout = seconds(5);  // short watches: exercise server-side ends too
  settings.max_watch_timeout = seconds(10);
  settings.backoff = {
      .initial = milliseconds(200), .max = milliseconds(2000), .multiplier = 2, .jitter = 0.2};
  settings.transform = DropFields({"/status", "/metadata/managedFields"});
  settings.compact_storage = true;  // round-trips real objects through MessagePack
  Informer informer(*client, RealClock::Instance(), settings, &registry);
  Mirror mirror;
  informer.AddHandler(mirror);
  informer.Start();
  // The same through paged LISTs (the fallback when a server cannot stream lists).
  InformerSettings paged_settings = settings;
  paged_settings.watch_list = false;
  Informer paged(*client, RealClock::Instance(), paged_settings, nullptr);
  paged.Start();
  ASSERT_TRUE(informer.WaitForSynced(seconds(60)));
  ASSERT_TRUE(paged.WaitForSynced(seconds(60)));
  EXPECT_EQ(informer.Size(), 200u);
  EXPECT_EQ(paged.Size(), 200u);
  EXPECT_FALSE(informer.List().front()->contains("managedFields"));
  // kube-apiserver 1.34 on etcd 3.6 streams lists (sendInitialEvents): no LIST request at all.
  EXPECT_EQ(informer.Stats().streamed_lists, 1);
  EXPECT_EQ(informer.Stats().watch_list_fallbacks, 0);
  EXPECT_EQ(paged.Stats().streamed_lists, 0);

  auto converged = [&](std::string* why) {
    const auto server = ServerState(*client);
    const auto cache = CacheState(informer);
    const auto paged_cache = CacheState(paged);
    const auto mirrored = mirror.State();
    if (server == cache && server == mirrored && server == paged_cache && !server.empty()) {
      return true;
    }
    *why = absl::StrCat("cache:", Diff(server, cache), " | handlers:", Diff(server, mirrored),
                        " | paged cache:", Diff(server, paged_cache));
    return false;
  };
  std::string why;

  // 1. Plain churn while watching.
  ASSERT_TRUE(churn.Run(50, 100, 50).ok());
  ASSERT_TRUE(testing::WaitFor([&] { return converged(&why); }, seconds(60))) << why;

  // 2. Restart the API server while a writer keeps going, then compact etcd: the informer's
  //    resume point is gone (410) and it must relist and diff.
  std::atomic<bool> writing{true};
  std::atomic<int> background_writes{0};
  std::thread writer([&] {
    Churn background{*client, 100};
    while (writing.load()) {
      if (background.Run(5, 5, 3).ok()) {
        ++background_writes;
      }
    }
  });
  const auto restart =
      testing::RunCommand(testing::PeersBinDir() + "/restart-kube-apiserver " + hub->data_dir());
  ASSERT_EQ(restart.exit_code, 0) << restart.output;
  const auto compact =
      testing::RunCommand(testing::PeersBinDir() + "/compact-etcd " + hub->data_dir());
  ASSERT_EQ(compact.exit_code, 0) << compact.output;
  ASSERT_TRUE(testing::WaitFor([&] { return background_writes.load() >= 3; }, seconds(120)));
  writing = false;
  writer.join();
  ASSERT_TRUE(churn.Run(20, 30, 20).ok());
  ASSERT_TRUE(testing::WaitFor([&] { return converged(&why); }, seconds(90))) << why;

  // 3. Compaction alone while watching (the watch cache keeps serving), then more churn.
  ASSERT_EQ(
      testing::RunCommand(testing::PeersBinDir() + "/compact-etcd " + hub->data_dir()).exit_code,
      0);
  ASSERT_TRUE(churn.Run(20, 40, 20).ok());
  ASSERT_TRUE(testing::WaitFor([&] { return converged(&why); }, seconds(60))) << why;

  // 4. A paged informer whose list is applied while a writer keeps going: its watch starts from
  //    the first page's version during the list, and the changes it delivers meanwhile are
  //    applied after the list, with no relist (the list's length does not matter).
  InformerSettings late_settings = paged_settings;
  late_settings.page_size = 7;
  Informer late(*client, RealClock::Instance(), late_settings, nullptr);
  Mirror late_mirror;
  late_mirror.Gate();
  late.AddHandler(late_mirror);
  late.Start();
  ASSERT_TRUE(testing::WaitFor([&] { return late_mirror.Waiting(); }, seconds(60)));
  EXPECT_TRUE(late.Listing());
  writing = true;
  background_writes = 0;
  std::thread late_writer([&] {
    Churn background{*client, 200};
    while (writing.load()) {
      if (background.Run(3, 5, 2).ok()) {
        ++background_writes;
      }
    }
  });
  ASSERT_TRUE(testing::WaitFor([&] { return background_writes.load() >= 2; }, seconds(60)));
  ASSERT_TRUE(testing::WaitFor([&] { return late.Stats().buffered_events >= 10; }, seconds(60)));
  late_mirror.Open();  // the replace goes on; the watch kept reading meanwhile
  ASSERT_TRUE(late.WaitForSynced(seconds(60)));
  writing = false;
  late_writer.join();
  auto late_converged = [&](std::string* why) {
    const auto server = ServerState(*client);
    const auto cache = CacheState(late);
    const auto mirrored = late_mirror.State();
    if (server == cache && server == mirrored && !server.empty() && !late.Listing()) {
      return true;
    }
    *why = absl::StrCat("cache:", Diff(server, cache), " | handlers:", Diff(server, mirrored));
    return false;
  };
  ASSERT_TRUE(testing::WaitFor([&] { return late_converged(&why); }, seconds(60))) << why;
  EXPECT_EQ(late.Stats().lists, 1);
  EXPECT_EQ(late.Stats().expired, 0);
  std::cerr << "[kube] paged list with a writer: buffered_events=" << late.Stats().buffered_events
            << " events=" << late.Stats().events << std::endl;
  late.Stop();

  const InformerStats stats = informer.Stats();
  EXPECT_GE(stats.expired, 1) << "the restart + compaction should have forced a relist";
  EXPECT_GE(stats.lists, 2);
  EXPECT_GE(stats.streamed_lists, 1);
  EXPECT_GE(paged.Stats().expired, 1);
  EXPECT_GE(paged.Stats().lists, 2);
  EXPECT_GE(stats.watch_errors, 1) << "the restart should have broken the watch";
  EXPECT_GT(mirror.Deletes(), 0);
  double restarts = 0;
  for (const auto& family : registry.Collect()) {
    if (family.name != "mmi_kube_watch_restarts_total") {
      continue;
    }
    for (const auto& metric : family.metric) {
      restarts += metric.counter.value;
    }
  }
  EXPECT_GE(restarts, 2);
  std::cerr << "[kube] objects=" << informer.Size() << " lists=" << stats.lists
            << " streamed_lists=" << stats.streamed_lists
            << " watch_list_fallbacks=" << stats.watch_list_fallbacks
            << " watches=" << stats.watches << " expired=" << stats.expired
            << " watch_errors=" << stats.watch_errors << " events=" << stats.events
            << " restarts_metric=" << restarts << std::endl;
  informer.Stop();
  paged.Stop();
}

// A child process running kube_leader_helper with stdout captured in a file.
// Forwards to a real client; while held, a List with a continue token (a list's second page)
// waits, so a test can act between a list's pages.
class PageGate final : public KubeClient {
 public:
  explicit PageGate(KubeClient& inner) : inner_(inner) {}
  void Hold() { held_ = true; }
  void Release() { held_ = false; }
  bool Waiting() const { return waiting_; }
  int UnpagedLists() const { return unpaged_lists_; }
  int ContinuedLists() const { return continued_lists_; }

  absl::StatusOr<json> Get(const ResourceRef& ref, std::string_view name) override {
    return inner_.Get(ref, name);
  }
  absl::StatusOr<ListResult> List(const ResourceRef& ref, const ListOptions& options) override {
    if (options.limit <= 0) {
      ++unpaged_lists_;
    }
    if (!options.continue_token.empty()) {
      ++continued_lists_;
      while (held_) {
        waiting_ = true;
        std::this_thread::sleep_for(milliseconds(5));
      }
    }
    return inner_.List(ref, options);
  }
  absl::StatusOr<json> Create(const ResourceRef& ref, const json& object,
                              const WriteOptions& options) override {
    return inner_.Create(ref, object, options);
  }
  absl::StatusOr<json> Update(const ResourceRef& ref, const json& object,
                              const WriteOptions& options) override {
    return inner_.Update(ref, object, options);
  }
  absl::StatusOr<json> Patch(const ResourceRef& ref, std::string_view name, PatchType type,
                             const json& patch, const PatchOptions& options,
                             std::string_view subresource) override {
    return inner_.Patch(ref, name, type, patch, options, subresource);
  }
  absl::Status Delete(const ResourceRef& ref, std::string_view name,
                      const DeleteOptions& options) override {
    return inner_.Delete(ref, name, options);
  }
  absl::Status Watch(const ResourceRef& ref, const WatchOptions& options,
                     const WatchHandler& handler, std::stop_token stop) override {
    return inner_.Watch(ref, options, handler, std::move(stop));
  }

 private:
  KubeClient& inner_;
  std::atomic<bool> held_{false};
  std::atomic<bool> waiting_{false};
  std::atomic<int> unpaged_lists_{0};
  std::atomic<int> continued_lists_{0};
};

// A paged LIST that outlives etcd's compaction (5 minutes on a hub) loses its continue token.
// The API server's 410 carries a token that goes on at its current state; the informer, whose
// watch runs since the first page, takes it instead of one unpaged LIST of everything, and the
// watch repairs what changed meanwhile.
TEST_F(KubeClientTest, PagedInformerGoesOnWithTheTokenOfAnExpiredContinue) {
  // Continued LISTs read from etcd, not from the watch cache's snapshots, so that compacting
  // etcd expires the token at once (with snapshots it expires once the cache's history has
  // moved on, as under the fleet benchmark's write load).
  MMI_START_PEER(hub, "kube", {"ROLE=hub", "FEATURE_GATES=ListFromCacheSnapshot=false"});
  auto client = ClientFor(*hub);
  ASSERT_NE(client, nullptr);
  Churn churn{*client};
  ASSERT_TRUE(churn.Run(/*creates=*/60, 0, 0).ok());

  PageGate gate(*client);
  gate.Hold();
  prometheus::Registry registry;
  InformerSettings settings;
  settings.resource = Apps();
  settings.page_size = 10;
  settings.watch_list = false;
  settings.compact_storage = true;
  settings.backoff = {
      .initial = milliseconds(200), .max = milliseconds(2000), .multiplier = 2, .jitter = 0.2};
  Informer informer(gate, RealClock::Instance(), settings, &registry);
  Mirror mirror;
  informer.AddHandler(mirror);
  informer.Start();
  ASSERT_TRUE(testing::WaitFor([&] { return gate.Waiting() && informer.Stats().watches >= 1; },
                               seconds(60)));
  EXPECT_TRUE(informer.Listing());
  // Changes under keys already listed, not yet listed, and new ones; then the compaction.
  ASSERT_TRUE(churn.Run(/*creates=*/10, /*updates=*/20, /*deletes=*/10).ok());
  const auto compact =
      testing::RunCommand(testing::PeersBinDir() + "/compact-etcd " + hub->data_dir());
  ASSERT_EQ(compact.exit_code, 0) << compact.output;
  gate.Release();

  std::string why;
  auto converged = [&] {
    const auto server = ServerState(*client);
    const auto cache = CacheState(informer);
    const auto mirrored = mirror.State();
    if (server.size() == 60 && server == cache && server == mirrored && !informer.Listing()) {
      return true;
    }
    why = absl::StrCat("server:", server.size(), " cache:", Diff(server, cache),
                       " | handlers:", Diff(server, mirrored));
    return false;
  };
  ASSERT_TRUE(testing::WaitFor(converged, seconds(60))) << why;
  const InformerStats stats = informer.Stats();
  EXPECT_EQ(stats.inconsistent_continues, 1);
  EXPECT_EQ(stats.lists, 1);
  EXPECT_EQ(stats.expired, 0);
  EXPECT_EQ(gate.UnpagedLists(), 0);
  double metric = 0;
  for (const auto& family : registry.Collect()) {
    if (family.name == "mmi_kube_list_inconsistent_continues_total") {
      metric = family.metric.at(0).counter.value;
    }
  }
  EXPECT_EQ(metric, 1);
  std::cerr << "[kube] expired continue: continued_lists=" << gate.ContinuedLists()
            << " buffered_events=" << stats.buffered_events << " events=" << stats.events
            << " stale_events=" << stats.stale_events << std::endl;
  informer.Stop();
}

class Candidate {
 public:
  Candidate(const testing::PeerProcess& hub, const std::string& identity)
      : identity_(identity), out_(hub.data_dir() + "/candidate-" + identity + ".out") {
    std::vector<std::string> args = {MMI_KUBE_LEADER_HELPER,
                                     hub.Get("KUBECONFIG"),
                                     Leases().namespace_name,
                                     "mmi-test-lease",
                                     identity,
                                     "3000",  // lease duration
                                     "2000",  // renew deadline
                                     "500"};  // retry period
    std::vector<char*> argv;
    for (auto& a : args) {
      argv.push_back(a.data());
    }
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, 2, (out_ + ".err").c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    EXPECT_EQ(posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ), 0);
    posix_spawn_file_actions_destroy(&actions);
  }
  ~Candidate() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  std::string Output() const {
    std::ifstream in(out_);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  bool Said(const std::string& what) const {
    return Output().find(what + " " + identity_) != std::string::npos;
  }
  bool Leading() const {
    const std::string out = Output();
    const size_t started = out.rfind("started-leading");
    const size_t stopped = out.rfind("stopped-leading");
    return started != std::string::npos && (stopped == std::string::npos || stopped < started);
  }
  void Signal(int sig) { kill(pid_, sig); }
  int Wait() {
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return status;
  }
  const std::string& Identity() const { return identity_; }

 private:
  std::string identity_;
  std::string out_;
  pid_t pid_ = -1;
};

TEST_F(KubeClientTest, LeaseElectionBetweenTwoProcessesHandsOverWhenTheLeaderDies) {
  MMI_START_PEER(hub, "kube", {"ROLE=hub"});
  auto client = ClientFor(*hub);
  ASSERT_NE(client, nullptr);
  auto holder = [&]() -> std::string {
    auto lease = client->Get(Leases(), "mmi-test-lease");
    return lease.ok() ? (*lease)["spec"].value("holderIdentity", "") : "";
  };

  auto a = std::make_unique<Candidate>(*hub, "proc-a");
  auto b = std::make_unique<Candidate>(*hub, "proc-b");
  ASSERT_TRUE(testing::WaitFor([&] { return a->Leading() || b->Leading(); }, seconds(30)))
      << a->Output() << b->Output();
  // Exactly one leads, and it is the lease holder; it stays that way for a few renewals.
  for (int i = 0; i < 6; ++i) {
    EXPECT_NE(a->Leading(), b->Leading()) << a->Output() << b->Output();
    std::this_thread::sleep_for(milliseconds(500));
  }
  Candidate* leader = a->Leading() ? a.get() : b.get();
  Candidate* standby = leader == a.get() ? b.get() : a.get();
  EXPECT_EQ(holder(), leader->Identity());

  // Crash the leader: no release, so the standby must wait out the lease duration (3 s) as it
  // observed it, then take over.
  const auto killed = std::chrono::steady_clock::now();
  leader->Signal(SIGKILL);
  leader->Wait();
  ASSERT_TRUE(testing::WaitFor([&] { return standby->Leading(); }, seconds(15), milliseconds(20)))
      << standby->Output();
  const auto handover = std::chrono::steady_clock::now() - killed;
  std::cerr << "[kube] leader killed -> standby leading after "
            << std::chrono::duration_cast<milliseconds>(handover).count() << " ms" << std::endl;
  EXPECT_LT(handover, milliseconds(3000 + 2 * 500 + 1000));  // lease + retry jitter + slack
  EXPECT_EQ(holder(), standby->Identity());

  // A graceful stop releases the lease for the next candidate at once.
  auto c = std::make_unique<Candidate>(*hub, "proc-c");
  ASSERT_TRUE(testing::WaitFor([&] { return c->Said("candidate"); }, seconds(10)));
  const auto stopping = std::chrono::steady_clock::now();
  standby->Signal(SIGTERM);
  EXPECT_EQ(WEXITSTATUS(standby->Wait()), 0);
  EXPECT_TRUE(standby->Said("stopped-leading"));
  ASSERT_TRUE(testing::WaitFor([&] { return c->Leading(); }, seconds(10), milliseconds(20)))
      << c->Output();
  const auto release_handover = std::chrono::steady_clock::now() - stopping;
  std::cerr << "[kube] graceful release -> next leader after "
            << std::chrono::duration_cast<milliseconds>(release_handover).count() << " ms"
            << std::endl;
  EXPECT_LT(release_handover, milliseconds(3000));  // well under the lease duration
  EXPECT_EQ(holder(), "proc-c");
  auto lease = client->Get(Leases(), "mmi-test-lease");
  ASSERT_TRUE(lease.ok());
  EXPECT_GE((*lease)["spec"]["leaseTransitions"].get<int>(), 2);
}

}  // namespace
}  // namespace mmi::kube
