// The dispatcher pipeline end to end on real peers: a hub kube-apiserver (start-kube ROLE=hub),
// PostgreSQL and mosquitto. DispatcherApp runs in process with the MQTT transport; a
// libmosquitto client (MqttTestClient) plays the work agent of cluster1: it subscribes the
// agent-side sourceevents topic and checks what arrives (maestro-protocol.md §3.2), and sends a
// spec resync request (§6.5). The kill test runs the `dispatcher` binary, kills it with SIGKILL
// mid-stream and restarts it.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <map>
#include <memory>
#include <pqxx/pqxx>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "libs/cloudevents/manifest_bundle.h"
#include "libs/cloudevents/mqtt_codec.h"
#include "libs/cloudevents/resource_id.h"
#include "libs/cloudevents/resync.h"
#include "libs/common/clock.h"
#include "libs/common/sleeper.h"
#include "libs/kube/http_kube_client.h"
#include "libs/kube/rest_config.h"
#include "libs/transport/mqtt/testing/mqtt_test_client.h"
#include "services/dispatcher/apps/hub_writes.h"
#include "services/dispatcher/apps/managed_clusters.h"
#include "services/dispatcher/apps/payload.h"
#include "services/dispatcher/dispatcher_app.h"
#include "tests/support/http.h"
#include "tests/support/peer.h"
#include "tests/support/wait.h"

#if MMI_DISPATCHER_IT_WITH_GRPC
#include "libs/cloudevents/grpc_codec.h"
#include "libs/transport/grpc/testing/fake_cloud_event_service.h"
#endif

namespace mmi::dispatcher {
namespace {

using nlohmann::json;
using std::chrono::seconds;

constexpr char kSource[] = "app-work-client";

json App(const std::string& name, const std::string& revision) {
  return {{"apiVersion", "argoproj.io/v1alpha1"},
          {"kind", "Application"},
          {"metadata",
           {{"name", name},
            {"namespace", "argocd"},
            {"labels", {{kPullLabel, "true"}}},
            {"annotations", {{kClusterAnnotation, "cluster1"}, {kSkipReconcileAnnotation, "true"}}},
            {"finalizers", {kResourcesFinalizer}}}},
          {"spec",
           {{"project", "default"},
            {"source",
             {{"repoURL", "https://github.com/argoproj/argocd-example-apps.git"},
              {"path", "guestbook"},
              {"targetRevision", revision}}},
            {"destination",
             {{"server", "https://cluster1-control-plane"}, {"namespace", "guestbook"}}}}}};
}

// cluster1's agent asking for its specs, holding `held` (§6.5).
cloudevents::Event SpecResyncRequest(const cloudevents::ResourceVersionList& held) {
  cloudevents::Event resync;
  resync.id = cloudevents::NewUuidV4();
  resync.source = "cluster1-work-agent";
  resync.type = std::string(cloudevents::kSpecResyncRequestType);
  resync.SetString(cloudevents::kExtClusterName, "cluster1");
  resync.SetString(cloudevents::kExtOriginalSource, "");
  resync.data_content_type = "application/json";
  resync.data = cloudevents::EncodeResourceVersionList(held).value();
  return resync;
}

// The work agent of cluster1 on the broker.
class Agent {
 public:
  explicit Agent(std::string broker) : broker_(std::move(broker)) {}
  bool Connect() {
    auto client = transport::testing::MqttTestClient::Connect(
        {.host_port = broker_, .client_id = "cluster1-work-agent", .keep_alive_s = 5});
    if (!client.ok()) {
      return false;
    }
    client_ = *std::move(client);
    client_->OnMessage([this](transport::testing::MqttReceived received) {
      auto event = cloudevents::DecodeMqtt(received.message);
      absl::MutexLock lock(&mu_);
      if (event.ok()) {
        received_.push_back(*std::move(event));
      } else {
        ++decode_errors_;
      }
    });
    const std::vector<int> granted =
        client_->Subscribe(absl::StrCat("sources/", kSource, "/consumers/cluster1/sourceevents"));
    return granted.size() == 1 && granted[0] < 0x80;
  }
  bool Send(const cloudevents::Event& event) {
    return Publish(event, absl::StrCat("sources/", kSource, "/consumers/cluster1/agentevents"));
  }
  bool Publish(const cloudevents::Event& event, const std::string& topic) {
    auto encoded = cloudevents::EncodeMqtt(event);
    if (!encoded.ok()) {
      return false;
    }
    const int puback = client_->Publish(topic, *encoded);
    return puback >= 0 && puback < 0x80;
  }
  std::vector<cloudevents::Event> Received() const {
    absl::MutexLock lock(&mu_);
    return received_;
  }
  // Events of type `type` for `resource_id`.
  std::vector<cloudevents::Event> For(const std::string& resource_id,
                                      std::string_view type = "") const {
    std::vector<cloudevents::Event> out;
    for (auto& e : Received()) {
      if (e.ResourceId().value_or("") == resource_id && (type.empty() || e.type == type)) {
        out.push_back(e);
      }
    }
    return out;
  }
  int decode_errors() const {
    absl::MutexLock lock(&mu_);
    return decode_errors_;
  }

 private:
  const std::string broker_;
  mutable absl::Mutex mu_;
  std::vector<cloudevents::Event> received_ ABSL_GUARDED_BY(mu_);
  int decode_errors_ ABSL_GUARDED_BY(mu_) = 0;
  std::unique_ptr<transport::testing::MqttTestClient> client_;  // last: its thread uses the above
};

class DispatcherIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto hub = mmi::testing::PeerProcess::Start("kube", {"ROLE=hub"});
    ASSERT_TRUE(hub.ok()) << hub.status();
    hub_peer_ = *std::move(hub);
    auto pg = mmi::testing::PeerProcess::Start("postgres");
    ASSERT_TRUE(pg.ok()) << pg.status();
    pg_peer_ = *std::move(pg);
    auto broker = mmi::testing::PeerProcess::Start("mosquitto");
    ASSERT_TRUE(broker.ok()) << broker.status();
    broker_peer_ = *std::move(broker);

    auto rest = kube::LoadKubeconfigFiles({hub_peer_->Get("KUBECONFIG")});
    ASSERT_TRUE(rest.ok()) << rest.status();
    kube::HttpKubeClientSettings hs;
    hs.rest = *rest;
    hs.rate_limit.qps = 0;
    auto client =
        kube::HttpKubeClient::Create(hs, RealClock::Instance(), RealSleeper::Instance(), nullptr);
    ASSERT_TRUE(client.ok()) << client.status();
    hub_ = *std::move(client);

    agent_ = std::make_unique<Agent>(broker_peer_->Get("MQTT_HOST"));
    ASSERT_TRUE(agent_->Connect()) << "the agent could not connect and subscribe";
  }

  DispatcherSettings Settings() const {
    DispatcherSettings s;
    s.log_level = "info";
    s.admin_listen = "127.0.0.1:0";
    s.kube.kubeconfig = hub_peer_->Get("KUBECONFIG");
    s.kube.qps = 0;
    s.store.dsn = pg_peer_->Get("PG_DSN");
    s.leader.enabled = false;
    s.gitops_cluster_enabled = false;
    transport::MqttSettings mqtt;
    mqtt.broker_host = broker_peer_->Get("MQTT_HOST");
    mqtt.source_id = kSource;
    mqtt.client_id = "dispatcher-it";
    mqtt.keep_alive = seconds(5);
    mqtt.reconnect_backoff = {std::chrono::milliseconds(100), std::chrono::milliseconds(1000), 2.0,
                              0.2};
    s.transport = mqtt;
    s.outbox.retry = {std::chrono::milliseconds(100), std::chrono::milliseconds(1000), 2.0, 0.2};
    s.shutdown_timeout = seconds(10);
    EXPECT_TRUE(FinalizeSettings(s).ok());
    return s;
  }

  std::unique_ptr<DispatcherApp> StartApp() {
    auto app = std::make_unique<DispatcherApp>(Settings());
    absl::Status s = app->Start();
    EXPECT_TRUE(s.ok()) << s;
    return app;
  }

  void CreateCluster(const std::string& name) {
    json mc = {{"apiVersion", "cluster.open-cluster-management.io/v1"},
               {"kind", "ManagedCluster"},
               {"metadata", {{"name", name}}},
               {"spec", {{"hubAcceptsClient", true}}}};
    auto created = hub_->Create(ManagedClustersRef(), mc, {});
    ASSERT_TRUE(created.ok()) << created.status();
  }

  void SetRevision(const std::string& name, const std::string& revision) {
    auto patched = hub_->Patch(ApplicationsRef("argocd"), name, kube::PatchType::kMerge,
                               {{"spec", {{"source", {{"targetRevision", revision}}}}}}, {}, "");
    ASSERT_TRUE(patched.ok()) << patched.status();
  }

  static std::string IdOf(const std::string& name) {
    return cloudevents::WorkResourceId(kSource, "cluster1", "argocd-" + name);
  }

  // Creates Application `name` and waits until its create event reaches the agent: everything
  // the informer delivered before it has been decided by then (one FIFO queue, one loop).
  void Barrier(const std::string& name) {
    auto created = hub_->Create(ApplicationsRef("argocd"), App(name, "HEAD"), {});
    ASSERT_TRUE(created.ok()) << created.status();
    ASSERT_TRUE(mmi::testing::WaitFor(
        [&] { return !agent_->For(IdOf(name), cloudevents::kSpecCreateRequestType).empty(); },
        seconds(60)))
        << "no create event for barrier " << name;
  }

  // Publishes a marker on the agent's own sourceevents topic and waits for it: mosquitto delivers
  // in order, so everything the broker accepted before the marker has reached the agent.
  void FlushBroker(const std::string& marker_id) {
    cloudevents::Event marker;
    marker.id = marker_id;
    marker.source = "dispatcher-integration-test";
    marker.type = std::string(cloudevents::kSpecResyncRequestType);
    marker.SetString(cloudevents::kExtClusterName, "cluster1");
    marker.data_content_type = "application/json";
    marker.data =
        cloudevents::EncodeResourceVersionList(cloudevents::ResourceVersionList{}).value();
    ASSERT_TRUE(agent_->Publish(
        marker, absl::StrCat("sources/", kSource, "/consumers/cluster1/sourceevents")));
    ASSERT_TRUE(mmi::testing::WaitFor(
        [&] {
          for (const auto& e : agent_->Received()) {
            if (e.id == marker_id) {
              return true;
            }
          }
          return false;
        },
        seconds(30)))
        << "the broker did not deliver the marker";
  }

  std::unique_ptr<mmi::testing::PeerProcess> hub_peer_;
  std::unique_ptr<mmi::testing::PeerProcess> pg_peer_;
  std::unique_ptr<mmi::testing::PeerProcess> broker_peer_;
  std::unique_ptr<kube::HttpKubeClient> hub_;
  std::unique_ptr<Agent> agent_;
};

TEST_F(DispatcherIntegrationTest, DispatchesChangesOnlyAndSurvivesARestart) {
  CreateCluster("cluster1");
  ASSERT_TRUE(hub_->Create(ApplicationsRef("argocd"), App("guestbook", "HEAD"), {}).ok());
  const std::string id = IdOf("guestbook");
  auto app = StartApp();

  // 1. The create event arrives with the spec's payload.
  ASSERT_TRUE(mmi::testing::WaitFor([&] { return !agent_->For(id).empty(); }, seconds(60)))
      << "no event for the Application";
  {
    const auto events = agent_->For(id);
    ASSERT_EQ(events.size(), 1U);
    const cloudevents::Event& e = events[0];
    EXPECT_EQ(e.type, cloudevents::kSpecCreateRequestType);
    EXPECT_EQ(e.source, kSource);
    EXPECT_EQ(e.ClusterName().value(), "cluster1");
    EXPECT_EQ(e.ResourceVersion().value(), 1);
    auto bundle = cloudevents::ManifestBundleOf(e);
    ASSERT_TRUE(bundle.ok()) << bundle.status();
    ASSERT_EQ(bundle->manifests.size(), 1U);
    const json& spoke = bundle->manifests[0];
    EXPECT_EQ(spoke["metadata"]["name"], "guestbook");
    EXPECT_EQ(spoke["metadata"]["namespace"], "argocd");
    EXPECT_EQ(spoke["spec"]["destination"]["server"], "https://kubernetes.default.svc");
    EXPECT_EQ(spoke["spec"]["source"]["targetRevision"], "HEAD");
    EXPECT_FALSE(
        spoke["metadata"].value("annotations", json::object()).contains(kClusterAnnotation));
    EXPECT_FALSE(spoke["metadata"].value("labels", json::object()).contains(kPullLabel));
    EXPECT_EQ(spoke["metadata"]["finalizers"], json::array({kResourcesFinalizer}));
    auto meta = cloudevents::ObjectMetaOf(e);
    ASSERT_TRUE(meta.ok()) << meta.status();
    EXPECT_EQ(meta->name, "argocd-guestbook");
    EXPECT_EQ(meta->annotations[kHubAppNameAnnotation], "guestbook");
  }

  // 2. A spec change: exactly one update.
  SetRevision("guestbook", "v2");
  ASSERT_TRUE(mmi::testing::WaitFor([&] { return agent_->For(id).size() >= 2; }, seconds(30)));
  {
    const auto events = agent_->For(id);
    ASSERT_EQ(events.size(), 2U);
    EXPECT_EQ(events[1].type, cloudevents::kSpecUpdateRequestType);
    EXPECT_EQ(events[1].ResourceVersion().value(), 2);
    EXPECT_EQ(
        cloudevents::ManifestBundleOf(events[1])->manifests[0]["spec"]["source"]["targetRevision"],
        "v2");
  }

  // 3. A status-only change (bumps generation on this CRD): no event.
  auto status = hub_->Patch(
      ApplicationsRef("argocd"), "guestbook", kube::PatchType::kMerge,
      {{"status", {{"health", {{"status", "Healthy"}}}, {"sync", {{"status", "Synced"}}}}}}, {},
      "");
  ASSERT_TRUE(status.ok()) << status.status();
  Barrier("barrier-1");
  EXPECT_EQ(agent_->For(id).size(), 2U);

  // /metrics and /readyz reflect the pipeline.
  const std::string admin = absl::StrCat("http://127.0.0.1:", app->admin_port());
  ASSERT_TRUE(mmi::testing::WaitFor(
      [&] {
        auto r = mmi::testing::HttpGet(admin + "/readyz");
        return r.ok() && r->status == 200;
      },
      seconds(30)));
  auto metrics = mmi::testing::HttpGet(admin + "/metrics");
  ASSERT_TRUE(metrics.ok());
  EXPECT_NE(metrics->body.find("mmi_dispatcher_dispatches_total{action=\"update\",result=\"ok\""),
            std::string::npos);
  EXPECT_NE(metrics->body.find("mmi_store_query_duration_seconds"), std::string::npos);
  // Nothing was dispatched before this first start (dispatch.firstList auto): a streamed list.
  EXPECT_NE(metrics->body.find("mmi_kube_lists_total{how=\"streamed\",resource=\"applications."
                               "argoproj.io\"} 1"),
            std::string::npos)
      << metrics->body;

  // 4. Restart: nothing unchanged is republished.
  ASSERT_TRUE(mmi::testing::WaitFor([&] { return app->outbox_pending() == 0; }, seconds(30)));
  EXPECT_TRUE(app->Stop());
  app.reset();
  const size_t before = agent_->Received().size();
  app = StartApp();
  Barrier("barrier-2");
  const auto after = agent_->Received();
  ASSERT_EQ(after.size(), before + 1) << "something was republished after the restart";
  EXPECT_EQ(after.back().ResourceId().value(), IdOf("barrier-2"));
  // A restart (resources were dispatched): a paged list, whose watch hands out changes at once.
  metrics = mmi::testing::HttpGet(absl::StrCat("http://127.0.0.1:", app->admin_port(), "/metrics"));
  ASSERT_TRUE(metrics.ok());
  EXPECT_NE(metrics->body.find(
                "mmi_kube_lists_total{how=\"paged\",resource=\"applications.argoproj.io\"} 1"),
            std::string::npos)
      << metrics->body;

  // 5. A spec resync request from the agent is answered from PostgreSQL.
  ASSERT_TRUE(agent_->Send(SpecResyncRequest({{{id, 1}}})));
  ASSERT_TRUE(mmi::testing::WaitFor(
      [&] { return !agent_->For(id, cloudevents::kSpecResyncResponseType).empty(); }, seconds(30)))
      << "no spec resync response";
  const auto answer = agent_->For(id, cloudevents::kSpecResyncResponseType).front();
  EXPECT_EQ(answer.ResourceVersion().value(), 2);
  EXPECT_EQ(cloudevents::ManifestBundleOf(answer)->manifests[0]["spec"]["source"]["targetRevision"],
            "v2");

  // 6. Deletion: the delete request goes out, the finalizer stays until the confirmation
  // (the status sink's UPDATE + NOTIFY, done here by hand) and is then released.
  ASSERT_TRUE(hub_->Delete(ApplicationsRef("argocd"), "guestbook", {}).ok());
  ASSERT_TRUE(mmi::testing::WaitFor(
      [&] { return !agent_->For(id, cloudevents::kSpecDeleteRequestType).empty(); }, seconds(30)));
  EXPECT_TRUE(
      agent_->For(id, cloudevents::kSpecDeleteRequestType).front().DeletionTimestamp().ok());
  auto still = hub_->Get(ApplicationsRef("argocd"), "guestbook");
  ASSERT_TRUE(still.ok());
  EXPECT_TRUE((*still)["metadata"].contains("deletionTimestamp"));
  {
    pqxx::connection conn(pg_peer_->Get("PG_DSN"));
    pqxx::work tx(conn);
    tx.exec0("UPDATE dispatched_resources SET deletion_state = 2 WHERE resource_id = " +
             tx.quote(id) + "::uuid");
    tx.exec0("NOTIFY mmi_deletion_confirmed, " + tx.quote(id));
    tx.commit();
  }
  ASSERT_TRUE(mmi::testing::WaitFor(
      [&] { return absl::IsNotFound(hub_->Get(ApplicationsRef("argocd"), "guestbook").status()); },
      seconds(30)))
      << "the finalizer was not released after the confirmation";
  {
    pqxx::connection conn(pg_peer_->Get("PG_DSN"));
    pqxx::nontransaction tx(conn);
    ASSERT_TRUE(mmi::testing::WaitFor(
        [&] {
          return tx
              .exec("SELECT 1 FROM dispatched_resources WHERE resource_id = " + tx.quote(id) +
                    "::uuid")
              .empty();
        },
        seconds(30)));
  }
  EXPECT_EQ(agent_->decode_errors(), 0);
  EXPECT_TRUE(app->Stop());
}

// The real binary, killed with SIGKILL while it is publishing. Every event the agent receives
// after the restart is either an event that was still in the outbox at the kill (it keeps its
// CloudEvent id: publishing it is the at-least-once hand-over, not a republish), or a change made
// while the dispatcher was down. Any other event (a new id for a resource already recorded and
// unchanged) is a republish, and there must be none; nothing recorded or changed may be lost.
TEST_F(DispatcherIntegrationTest, AKillMidStreamLosesNothingAndRepublishesNothingUnchanged) {
  CreateCluster("cluster1");
  constexpr int kApps = 60;
  auto name_of = [](int i) { return "app-" + std::to_string(i); };
  for (int i = 0; i < kApps; ++i) {
    ASSERT_TRUE(hub_->Create(ApplicationsRef("argocd"), App(name_of(i), "HEAD"), {}).ok());
  }

  // 1. The binary, from a config file; its log stays in the PostgreSQL peer's data dir.
  const std::string dir = pg_peer_->data_dir();
  const std::string config = dir + "/dispatcher-killed.yaml";
  {
    std::ofstream out(config);
    out << "logLevel: info\n"
        << "admin:\n  listenAddress: 127.0.0.1:0\n"
        << "kube:\n  kubeconfig: " << hub_peer_->Get("KUBECONFIG") << "\n  qps: 0\n"
        << "store:\n  dsn: \"" << pg_peer_->Get("PG_DSN") << "\"\n"
        << "leaderElection:\n  enabled: false\n"
        << "gitopsCluster:\n  enabled: false\n"
        << "transport:\n  type: mqtt\n  mqtt:\n"
        << "    brokerHost: " << broker_peer_->Get("MQTT_HOST") << "\n"
        << "    sourceId: " << kSource << "\n"
        << "    clientId: dispatcher-killed\n";
  }
  std::vector<std::string> args = {MMI_DISPATCHER_BINARY, "--config", config};
  std::vector<char*> argv;
  for (auto& a : args) {
    argv.push_back(a.data());
  }
  argv.push_back(nullptr);
  const std::string log = dir + "/dispatcher-killed.log";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = -1;
  ASSERT_EQ(posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&actions);

  // 2. Mid-stream: some creates have reached the agent, others not yet. SIGKILL.
  const bool started_publishing = mmi::testing::WaitFor(
      [&] {
        size_t n = 0;
        for (const auto& e : agent_->Received()) {
          n += e.type == cloudevents::kSpecCreateRequestType ? 1 : 0;
        }
        return n >= 5;
      },
      seconds(90));
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  ASSERT_TRUE(started_publishing) << "the binary published nothing; its log: " << log;
  FlushBroker("marker-after-kill");

  // 3. What the killed process left: the resources it recorded and its unsent outbox (by id).
  std::set<std::string> recorded;
  std::map<std::string, std::set<std::string>> unsent;  // resource id -> CloudEvent ids
  {
    pqxx::connection conn(pg_peer_->Get("PG_DSN"));
    pqxx::nontransaction tx(conn);
    for (const auto& r : tx.exec("SELECT resource_id::text FROM dispatched_resources")) {
      recorded.insert(r[0].as<std::string>());
    }
    for (const auto& r : tx.exec("SELECT resource_id::text, event FROM outbox")) {
      unsent[r[0].as<std::string>()].insert(
          json::parse(r[1].as<std::string>())["id"].get<std::string>());
    }
  }
  size_t unsent_count = 0;
  for (const auto& [id, ids] : unsent) {
    unsent_count += ids.size();
  }
  RecordProperty("recorded_at_kill", static_cast<int>(recorded.size()));
  RecordProperty("unsent_at_kill", static_cast<int>(unsent_count));
  const size_t before = agent_->Received().size();
  std::set<std::string> seen_before;
  for (const auto& e : agent_->Received()) {
    seen_before.insert(e.id);
  }

  // 4. One real change while the dispatcher is down, then the restart.
  SetRevision(name_of(0), "v2");
  auto app = StartApp();
  const auto complete = [&] {
    const auto events = agent_->Received();
    std::map<std::string, int> creates;
    bool changed = false;
    for (const auto& e : events) {
      const std::string id = e.ResourceId().value_or("");
      if (e.type == cloudevents::kSpecCreateRequestType) {
        ++creates[id];
      }
      if (id == IdOf(name_of(0)) && e.type != cloudevents::kSpecDeleteRequestType) {
        auto bundle = cloudevents::ManifestBundleOf(e);
        changed = changed || (bundle.ok() && !bundle->manifests.empty() &&
                              bundle->manifests[0]["spec"]["source"]["targetRevision"] == "v2");
      }
    }
    for (int i = 0; i < kApps; ++i) {
      if (creates[IdOf(name_of(i))] == 0) {
        return false;
      }
    }
    return changed && app->outbox_pending() == 0;
  };
  ASSERT_TRUE(mmi::testing::WaitFor(complete, seconds(120)))
      << "not every Application (and the change made while down) reached the agent";
  Barrier("barrier-after-kill");
  FlushBroker("marker-after-restart");

  // 5. Count: per resource, every event after the restart.
  const auto all = agent_->Received();
  std::map<std::string, std::vector<cloudevents::Event>> after;
  for (size_t i = before; i < all.size(); ++i) {
    const std::string id = all[i].ResourceId().value_or("");
    if (!id.empty()) {
      after[id].push_back(all[i]);
    }
  }
  int republished = 0;
  for (int i = 0; i < kApps; ++i) {
    const std::string id = IdOf(name_of(i));
    const auto& pending = unsent[id];
    std::set<std::string> resent;
    std::vector<cloudevents::Event> fresh;  // new CloudEvent ids
    for (const auto& e : after[id]) {
      if (pending.contains(e.id)) {
        resent.insert(e.id);
      } else if (!seen_before.contains(e.id)) {
        fresh.push_back(e);
      }
    }
    // Nothing lost: every event still unsent at the kill went out after the restart.
    EXPECT_EQ(resent, pending) << name_of(i) << ": an unsent outbox event was not published";
    if (i == 0) {
      // The change made while down: exactly one new event, carrying it.
      ASSERT_EQ(fresh.size(), 1U) << name_of(i);
      EXPECT_EQ(
          cloudevents::ManifestBundleOf(fresh[0])->manifests[0]["spec"]["source"]["targetRevision"],
          "v2");
      continue;
    }
    if (recorded.contains(id)) {
      republished += static_cast<int>(fresh.size());  // recorded and unchanged: nothing new
    } else {
      // Never recorded before the kill: decided afresh, one create.
      ASSERT_EQ(fresh.size(), 1U) << name_of(i);
      EXPECT_EQ(fresh[0].type, cloudevents::kSpecCreateRequestType);
    }
  }
  EXPECT_EQ(republished, 0) << "events republished for unchanged resources after the kill ("
                            << recorded.size() << " recorded, " << unsent_count
                            << " unsent at the kill)";
  EXPECT_EQ(agent_->decode_errors(), 0);
  EXPECT_TRUE(app->Stop());
}

TEST_F(DispatcherIntegrationTest, AnApplicationForAnUnknownClusterWaitsForIt) {
  ASSERT_TRUE(hub_->Create(ApplicationsRef("argocd"), App("early", "HEAD"), {}).ok());
  auto app = StartApp();
  // An Event on the hub Application reports the unknown cluster; nothing is sent.
  ASSERT_TRUE(mmi::testing::WaitFor(
      [&] {
        auto events = hub_->List({"", "v1", "events", "argocd"}, {});
        if (!events.ok()) {
          return false;
        }
        for (const auto& ev : events->items) {
          if (ev.value("reason", "") == "UnknownManagedCluster") {
            return true;
          }
        }
        return false;
      },
      seconds(60)))
      << "no UnknownManagedCluster Event";
  EXPECT_TRUE(agent_->Received().empty());
  // The ManagedCluster appears: the Application is dispatched without any other change.
  CreateCluster("cluster1");
  ASSERT_TRUE(
      mmi::testing::WaitFor([&] { return !agent_->For(IdOf("early")).empty(); }, seconds(60)));
  EXPECT_TRUE(app->Stop());
}

// An agent that lost its state reconnects while no dispatcher is subscribed (a restart, a leader
// handover, the seconds before a new subscription exists): with the dispatcher's persistent MQTT
// session the broker keeps the agent's spec resync request for the next leader, which answers
// it, although PostgreSQL says the resource was dispatched long ago and nothing would republish
// it otherwise.
TEST_F(DispatcherIntegrationTest, ASpecResyncSentWhileNoDispatcherWasSubscribedIsAnswered) {
  CreateCluster("cluster1");
  auto settings = Settings();
  std::get<transport::MqttSettings>(settings.transport).session_expiry = std::chrono::hours(1);
  const std::string id = IdOf("guestbook");
  {
    DispatcherApp app(settings);
    ASSERT_TRUE(app.Start().ok());
    ASSERT_TRUE(hub_->Create(ApplicationsRef("argocd"), App("guestbook", "HEAD"), {}).ok());
    ASSERT_TRUE(mmi::testing::WaitFor(
        [&] { return !agent_->For(id, cloudevents::kSpecCreateRequestType).empty(); }, seconds(60)))
        << "no create event";
    ASSERT_TRUE(mmi::testing::WaitFor([&] { return app.outbox_pending() == 0; }, seconds(30)));
    // Answered: the subscription (and so the session's) exists before the dispatcher stops.
    ASSERT_TRUE(agent_->Send(SpecResyncRequest({})));
    ASSERT_TRUE(mmi::testing::WaitFor(
        [&] { return agent_->For(id, cloudevents::kSpecResyncResponseType).size() == 1; },
        seconds(60)))
        << "the running dispatcher did not answer a spec resync request";
    app.Stop();
  }
  // The agent comes back with empty state while no dispatcher runs.
  ASSERT_TRUE(agent_->Send(SpecResyncRequest({})));

  DispatcherApp next(settings);
  ASSERT_TRUE(next.Start().ok());
  ASSERT_TRUE(mmi::testing::WaitFor(
      [&] { return agent_->For(id, cloudevents::kSpecResyncResponseType).size() >= 2; },
      seconds(60)))
      << "the spec resync request sent while no dispatcher was subscribed was never answered";
  const auto answer = agent_->For(id, cloudevents::kSpecResyncResponseType).back();
  EXPECT_TRUE(cloudevents::ManifestBundleOf(answer).ok()) << "the full spec, not a delete";
  EXPECT_FALSE(answer.DeletionTimestamp().ok());
  next.Stop();
}

#if MMI_DISPATCHER_IT_WITH_GRPC
// The dispatcher over gRPC to a source server that restarts (a Maestro restart as the client sees
// it: the server goes away and comes back on the same port). Publishing waits while it is down
// and resumes by itself once it is back: no restart of the dispatcher, nothing lost. A stop while
// the server is down does not wait for an outbox that cannot drain.
TEST_F(DispatcherIntegrationTest, OverGrpcDispatchResumesByItselfAfterTheSourceServerRestarts) {
  CreateCluster("cluster1");
  transport::testing::FakeCloudEventService maestro(
      transport::testing::FakeCloudEventService::Listen::kLoopbackTcp);
  auto settings = Settings();
  transport::GrpcSettings grpc;
  grpc.url = maestro.address();
  grpc.source_id = kSource;
  grpc.reconnect_backoff = {std::chrono::milliseconds(100), std::chrono::milliseconds(1000), 2.0,
                            0.2};
  settings.transport = grpc;
  ASSERT_TRUE(FinalizeSettings(settings).ok());
  const auto published = [&maestro](const std::string& id) {
    for (const auto& call : maestro.publishes()) {
      auto event = cloudevents::DecodeGrpc(call.event);
      if (event.ok() && event->ResourceId().value_or("") == id) {
        return true;
      }
    }
    return false;
  };
  const auto admin = [](const DispatcherApp& app, const std::string& path) {
    return mmi::testing::HttpGet(absl::StrCat("http://127.0.0.1:", app.admin_port(), path));
  };

  DispatcherApp app(settings);
  ASSERT_TRUE(app.Start().ok());
  ASSERT_TRUE(hub_->Create(ApplicationsRef("argocd"), App("before", "HEAD"), {}).ok());
  ASSERT_TRUE(mmi::testing::WaitFor([&] { return published(IdOf("before")); }, seconds(60)));

  maestro.StopServing();
  ASSERT_TRUE(mmi::testing::WaitFor(
      [&] {
        auto r = admin(app, "/readyz");
        return r.ok() && r->status == 503;
      },
      seconds(30)))
      << "readiness does not show the transport down";
  ASSERT_TRUE(hub_->Create(ApplicationsRef("argocd"), App("during", "HEAD"), {}).ok());
  ASSERT_TRUE(mmi::testing::WaitFor([&] { return app.outbox_pending() >= 1; }, seconds(30)))
      << "the change made while the server was down was not recorded";

  maestro.StartServing();
  ASSERT_TRUE(mmi::testing::WaitFor([&] { return published(IdOf("during")); }, seconds(60)))
      << "dispatch did not resume after the source server came back";
  ASSERT_TRUE(mmi::testing::WaitFor([&] { return app.outbox_pending() == 0; }, seconds(30)));
  ASSERT_TRUE(mmi::testing::WaitFor(
      [&] {
        auto r = admin(app, "/readyz");
        return r.ok() && r->status == 200;
      },
      seconds(30)));
  const auto metrics = admin(app, "/metrics");
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_TRUE(absl::StrContains(
      metrics->body, R"(mmi_transport_reconnects_total{client="publisher",transport="grpc"} 1)"))
      << metrics->body.substr(0, 4000);

  // Down again with a change pending: Stop() gives up on the outbox instead of waiting out
  // shutdownTimeout; the change stays recorded for the next start.
  maestro.StopServing();
  ASSERT_TRUE(hub_->Create(ApplicationsRef("argocd"), App("at-stop", "HEAD"), {}).ok());
  ASSERT_TRUE(mmi::testing::WaitFor([&] { return app.outbox_pending() >= 1; }, seconds(30)));
  EXPECT_FALSE(app.Stop()) << "the outbox cannot have drained towards a server that is down";
  pqxx::connection conn(pg_peer_->Get("PG_DSN"));
  pqxx::work tx(conn);
  EXPECT_GE(tx.exec1("SELECT count(*) FROM outbox")[0].as<int>(), 1)
      << "the undelivered change must stay in the outbox";
}
#endif

}  // namespace
}  // namespace mmi::dispatcher
