// The dispatcher pipeline end to end on real peers: a hub kube-apiserver (start-kube ROLE=hub),
// PostgreSQL and mosquitto. DispatcherApp runs in process with the MQTT transport; a Paho
// client plays the work agent of cluster1: it subscribes the agent-side sourceevents topic and
// checks what arrives (maestro-protocol.md §3.2), and sends a spec resync request (§6.5).
#include <gtest/gtest.h>
#include <mqtt/async_client.h>

#include <atomic>
#include <memory>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "libs/cloudevents/manifest_bundle.h"
#include "libs/cloudevents/mqtt_codec.h"
#include "libs/cloudevents/resource_id.h"
#include "libs/cloudevents/resync.h"
#include "libs/common/clock.h"
#include "libs/kube/http_kube_client.h"
#include "libs/kube/rest_config.h"
#include "libs/kube/sleeper.h"
#include "services/dispatcher/dispatcher_app.h"
#include "services/dispatcher/hub_writes.h"
#include "services/dispatcher/managed_clusters.h"
#include "services/dispatcher/payload.h"
#include "tests/support/http.h"
#include "tests/support/peer.h"
#include "tests/support/wait.h"

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

// The work agent of cluster1 on the broker.
class Agent {
 public:
  explicit Agent(const std::string& broker) {
    client_ = std::make_unique<mqtt::async_client>("tcp://" + broker, "cluster1-work-agent",
                                                   mqtt::create_options(MQTTVERSION_5));
    client_->set_message_callback([this](mqtt::const_message_ptr message) {
      cloudevents::MqttMessage m;
      m.payload = message->get_payload_str();
      const auto& props = message->get_properties();
      if (props.contains(mqtt::property::CONTENT_TYPE)) {
        m.content_type = mqtt::get<std::string>(props, mqtt::property::CONTENT_TYPE);
      }
      for (size_t i = 0; i < props.count(mqtt::property::USER_PROPERTY); ++i) {
        auto kv = mqtt::get<mqtt::string_pair>(props, mqtt::property::USER_PROPERTY, i);
        m.user_properties.emplace_back(std::get<0>(kv), std::get<1>(kv));
      }
      auto event = cloudevents::DecodeMqtt(m);
      absl::MutexLock lock(&mu_);
      if (event.ok()) {
        received_.push_back(*std::move(event));
      } else {
        ++decode_errors_;
      }
    });
  }
  ~Agent() {
    try {
      client_->disconnect()->wait_for(seconds(5));
    } catch (const std::exception&) {
    }
  }
  bool Connect() {
    auto options = mqtt::connect_options_builder()
                       .mqtt_version(MQTTVERSION_5)
                       .clean_start(true)
                       .keep_alive_interval(seconds(5))
                       .finalize();
    try {
      if (!client_->connect(options)->wait_for(seconds(10))) {
        return false;
      }
      return client_
          ->subscribe(absl::StrCat("sources/", kSource, "/consumers/cluster1/sourceevents"), 1)
          ->wait_for(seconds(10));
    } catch (const std::exception&) {
      return false;
    }
  }
  bool Send(const cloudevents::Event& event) {
    auto encoded = cloudevents::EncodeMqtt(event);
    if (!encoded.ok()) {
      return false;
    }
    mqtt::properties props;
    if (encoded->content_type) {
      props.add(mqtt::property(mqtt::property::CONTENT_TYPE, *encoded->content_type));
    }
    for (const auto& [k, v] : encoded->user_properties) {
      props.add(mqtt::property(mqtt::property::USER_PROPERTY, k, v));
    }
    auto msg = mqtt::message_ptr_builder()
                   .topic(absl::StrCat("sources/", kSource, "/consumers/cluster1/agentevents"))
                   .payload(encoded->payload)
                   .qos(1)
                   .properties(props)
                   .finalize();
    return client_->publish(msg)->wait_for(seconds(10));
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
  std::unique_ptr<mqtt::async_client> client_;
  mutable absl::Mutex mu_;
  std::vector<cloudevents::Event> received_ ABSL_GUARDED_BY(mu_);
  int decode_errors_ ABSL_GUARDED_BY(mu_) = 0;
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
    auto client = kube::HttpKubeClient::Create(hs, RealClock::Instance(),
                                               kube::RealSleeper::Instance(), nullptr);
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

  // 5. A spec resync request from the agent is answered from PostgreSQL.
  cloudevents::Event resync;
  resync.id = cloudevents::NewUuidV4();
  resync.source = "cluster1-work-agent";
  resync.type = std::string(cloudevents::kSpecResyncRequestType);
  resync.SetString(cloudevents::kExtClusterName, "cluster1");
  resync.SetString(cloudevents::kExtOriginalSource, "");
  resync.data_content_type = "application/json";
  resync.data = cloudevents::EncodeResourceVersionList({{{id, 1}}}).value();
  ASSERT_TRUE(agent_->Send(resync));
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

}  // namespace
}  // namespace mmi::dispatcher
