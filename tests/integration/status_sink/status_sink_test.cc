// The status sink end to end on real peers: a hub kube-apiserver (Application CRD), PostgreSQL
// (the dispatcher's dispatched_resources row) and mosquitto (MQTT 5). The test plays the agent:
// it publishes a status CloudEvent on the cluster's agentevents topic exactly as the MQTT binding
// says (maestro-protocol.md §3) and checks the hub Application's status.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <pqxx/pqxx>

#include "absl/synchronization/mutex.h"
#include "libs/cloudevents/mqtt_codec.h"
#include "libs/cloudevents/sequence_id.h"
#include "libs/cloudevents/status_hash.h"
#include "libs/common/clock.h"
#include "libs/kube/http_kube_client.h"
#include "libs/kube/rest_config.h"
#include "libs/store/postgres/migrator.h"
#include "libs/transport/mqtt/testing/mqtt_test_client.h"
#include "libs/transport/testing/metric_value.h"
#include "services/status-sink/status_sink_app.h"
#include "services/status-sink/writes/writer.h"
#include "tests/support/peer.h"
#include "tests/support/wait.h"

namespace mmi::status_sink {
namespace {

using nlohmann::json;
using std::chrono::seconds;
using transport::testing::MetricValue;

constexpr char kSource[] = "mmi-it";
constexpr char kCluster[] = "cluster1";
constexpr char kResource[] = "278f3a61-efe5-56de-abba-6aedbfcce272";
constexpr char kApp[] = "guestbook-cluster1";

// A PUBACK reason code the broker accepted with (-1: none came).
bool Accepted(int puback) { return puback >= 0 && puback < 0x80; }

// The agent's status report for the Application (maestro-protocol.md §2.7, agent leg: no
// manifestBundle echo, resourceversion as a string).
cloudevents::Event AgentStatusEvent(int n, const json& app_status) {
  json data = {
      {"conditions", json::array({{{"type", "Applied"},
                                   {"status", "True"},
                                   {"observedGeneration", 1},
                                   {"lastTransitionTime", "2026-06-01T10:00:04Z"},
                                   {"reason", "AppliedManifestWorkComplete"},
                                   {"message", "Apply manifest work complete"}}})},
      {"resourceStatus",
       json::array({{{"resourceMeta",
                      {{"ordinal", 0},
                       {"group", "argoproj.io"},
                       {"version", "v1alpha1"},
                       {"kind", "Application"},
                       {"resource", "applications"},
                       {"name", kApp},
                       {"namespace", "openshift-gitops"}}},
                     {"statusFeedback",
                      {{"values",
                        json::array({{{"name", "status"},
                                      {"fieldValue",
                                       {{"type", "JsonRaw"}, {"jsonRaw", app_status.dump()}}}}})}}},
                     {"conditions", json::array()}}})}};
  cloudevents::Event event;
  event.id = "agent-status-" + std::to_string(n);
  event.source = std::string(kCluster) + "-work-agent";
  event.type = std::string(cloudevents::kStatusUpdateRequestType);
  event.data_content_type = std::string(cloudevents::kJsonContentType);
  event.time =
      std::chrono::time_point_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now());
  event.SetString(cloudevents::kExtClusterName, kCluster);
  event.SetString(cloudevents::kExtOriginalSource, kSource);
  event.SetString(cloudevents::kExtResourceId, kResource);
  event.SetString(cloudevents::kExtResourceVersion, "1");
  const int64_t millis = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count() -
                         cloudevents::kSnowflakeEpochUnixMs;
  event.SetString(cloudevents::kExtSequenceId,
                  cloudevents::SequenceId::FromParts(millis, 1, n)->ToString());
  event.SetString(cloudevents::kExtStatusHash, *cloudevents::StatusHashOfData(data));
  event.data = data.dump();
  return event;
}

json AppStatus() {
  return {
      {"health", {{"status", "Healthy"}}},
      {"reconciledAt", "2026-06-01T10:00:04Z"},
      {"sourceType", "Directory"},
      {"sync", {{"revision", "53e28ff20cc530b9ada2173fbbd64d48338583ba"}, {"status", "Synced"}}}};
}

TEST(StatusSinkIntegrationTest, WritesAnAgentsStatusOntoTheHubApplicationOnceOnly) {
  MMI_START_PEER(hub, "kube", {"ROLE=hub"});
  MMI_START_PEER(db, "postgres");
  MMI_START_PEER(broker, "mosquitto");

  // The hub: a namespace and the placeholder Application.
  auto rest = kube::LoadKubeconfigFiles({hub->Get("KUBECONFIG")});
  ASSERT_TRUE(rest.ok()) << rest.status();
  kube::HttpKubeClientSettings kube_settings;
  kube_settings.rest = *rest;
  auto client = kube::HttpKubeClient::Create(kube_settings, RealClock::Instance(),
                                             RealSleeper::Instance(), nullptr);
  ASSERT_TRUE(client.ok()) << client.status();
  kube::KubeClient& kube = **client;
  auto ns = kube.Create(
      {"", "v1", "namespaces", ""},
      {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "argocd"}}}}, {});
  ASSERT_TRUE(ns.ok() || ns.status().code() == absl::StatusCode::kAlreadyExists) << ns.status();
  // The Application's ApplicationSet progresses with RollingSync, so the sink (default
  // status.progressingBeforeHealthy: RollingSync, watching ApplicationSets on this real hub)
  // writes Progressing before the first Healthy (Applications of other ApplicationSets get one
  // write: services/status-sink/sink_test.cc).
  const json rolling_appset = {
      {"apiVersion", "argoproj.io/v1alpha1"},
      {"kind", "ApplicationSet"},
      {"metadata", {{"name", "guestbook"}, {"namespace", "argocd"}}},
      {"spec",
       {{"generators", json::array({{{"list", {{"elements", json::array()}}}}})},
        {"strategy",
         {{"type", "RollingSync"},
          {"rollingSync",
           {{"steps", json::array({{{"matchExpressions",
                                     json::array({{{"key", "envLabel"},
                                                   {"operator", "In"},
                                                   {"values", json::array({"env-dev"})}}})}}})}}}}},
        {"template",
         {{"metadata", {{"name", "{{name}}-guestbook"}}},
          {"spec",
           {{"project", "default"},
            {"destination", {{"server", "{{server}}"}, {"namespace", "guestbook"}}},
            {"source",
             {{"repoURL", "https://github.com/argoproj/argocd-example-apps.git"},
              {"path", "guestbook"}}}}}}}}}};
  auto appset =
      kube.Create({"argoproj.io", "v1alpha1", "applicationsets", "argocd"}, rolling_appset, {});
  ASSERT_TRUE(appset.ok()) << appset.status();
  const json app = {
      {"apiVersion", "argoproj.io/v1alpha1"},
      {"kind", "Application"},
      {"metadata", {{"name", kApp}, {"namespace", "argocd"}}},
      {"spec",
       {{"project", "default"},
        {"destination", {{"server", "https://cluster1.example"}, {"namespace", "guestbook"}}},
        {"source",
         {{"repoURL", "https://github.com/argoproj/argocd-example-apps.git"},
          {"path", "guestbook"},
          {"targetRevision", "HEAD"}}}}}};
  auto created = kube.Create(ApplicationsRef("argocd"), app, {});
  ASSERT_TRUE(created.ok()) << created.status();

  // The dispatcher's row for this (Application, cluster).
  const std::string dsn = db->Get("PG_DSN");
  auto migrated = store::postgres::ApplyMigrations({.dsn = dsn}, migrations::All());
  ASSERT_TRUE(migrated.ok()) << migrated.status();
  {
    pqxx::connection conn(dsn);
    pqxx::work tx(conn);
    tx.exec0(std::string(
                 "INSERT INTO dispatched_resources (resource_id, cluster, hub_namespace, hub_name, "
                 "hub_uid, work_name, appset_namespace, appset_name, payload_hash, payload) "
                 "VALUES ('") +
             kResource + "', 'cluster1', 'argocd', '" + kApp +
             "', 'uid-1', 'argocd-guestbook-cluster1', 'argocd', 'guestbook', 'h', '{}')");
    tx.commit();
  }

  // The agent: MQTT 5 on the broker's plain listener, listening on its sourceevents topic.
  absl::Mutex mu;  // before the agent: its thread uses them until it is gone
  std::vector<cloudevents::Event> to_agent;
  auto agent = transport::testing::MqttTestClient::Connect(
      {.host_port = broker->Get("MQTT_HOST"), .client_id = "cluster1-agent"});
  ASSERT_TRUE(agent.ok()) << agent.status();
  (*agent)->OnMessage([&](transport::testing::MqttReceived received) {
    auto event = cloudevents::DecodeMqtt(received.message);
    if (event.ok()) {
      absl::MutexLock lock(&mu);
      to_agent.push_back(*std::move(event));
    }
  });
  ASSERT_EQ((*agent)->Subscribe(std::string("sources/") + kSource + "/consumers/" + kCluster +
                                "/sourceevents"),
            std::vector<int>{1});

  // The sink, in process.
  StatusSinkSettings settings;
  settings.kube.kubeconfig = hub->Get("KUBECONFIG");
  settings.store.dsn = dsn;
  settings.store.pool_size = 2;
  settings.leader.lease_namespace = "default";
  settings.admin_listen = "127.0.0.1:0";
  settings.writers = 2;
  settings.shutdown_timeout = std::chrono::milliseconds(5'000);
  transport::MqttSettings mqtt_settings;
  mqtt_settings.broker_host = broker->Get("MQTT_HOST");
  mqtt_settings.source_id = kSource;
  mqtt_settings.client_id = "mmi-it-sink";
  mqtt_settings.reconnect_backoff = {std::chrono::milliseconds(100), seconds(1), 2.0, 0.2};
  settings.transport = mqtt_settings;
  ASSERT_TRUE(FinalizeSettings(settings).ok());
  StatusSinkApp sink(settings);
  ASSERT_TRUE(sink.Start().ok());
  ASSERT_TRUE(mmi::testing::WaitFor([&] { return sink.sink_ready(); }, seconds(60)))
      << "the sink did not lead, resume and subscribe";

  // On subscribing, the sink asked the agent for every status that differs from what it has.
  ASSERT_TRUE(mmi::testing::WaitFor(
      [&] {
        absl::MutexLock lock(&mu);
        return !to_agent.empty();
      },
      seconds(30)))
      << "no status resync request reached the agent";
  {
    absl::MutexLock lock(&mu);
    EXPECT_EQ(to_agent[0].type, cloudevents::kStatusResyncRequestType);
    EXPECT_EQ(to_agent[0].ClusterName().value_or(""), kCluster);
  }

  const std::string agent_topic =
      std::string("sources/") + kSource + "/consumers/" + kCluster + "/agentevents";
  auto encoded = cloudevents::EncodeMqtt(AgentStatusEvent(1, AppStatus()));
  ASSERT_TRUE(encoded.ok()) << encoded.status();
  ASSERT_TRUE(Accepted((*agent)->Publish(agent_topic, *encoded)));

  json status;
  ASSERT_TRUE(mmi::testing::WaitFor(
      [&] {
        auto got = kube.Get(ApplicationsRef("argocd"), kApp);
        if (!got.ok() || !got->contains("status")) {
          return false;
        }
        status = (*got)["status"];
        return status.value("health", json::object()).value("status", "") == "Healthy";
      },
      seconds(30)))
      << "the hub Application never showed the agent's status";
  EXPECT_EQ(status["sync"]["status"], "Synced");
  EXPECT_EQ(status["sync"]["revision"], "53e28ff20cc530b9ada2173fbbd64d48338583ba");
  EXPECT_EQ(MetricValue(sink.registry(), "mmi_status_updates_total", {{"result", "ok"}}), 1);
  // The first Healthy status was preceded by the same status with health Progressing (its
  // ApplicationSet uses RollingSync, hub-apis.md §5.6), and the API server accepted it.
  EXPECT_EQ(MetricValue(sink.registry(), "mmi_status_progressing_writes_total", {{"result", "ok"}}),
            1);
  // ... decided from the sink's watch cache of this hub's ApplicationSets.
  EXPECT_EQ(MetricValue(sink.registry(), "mmi_kube_cache_objects",
                        {{"resource", "applicationsets.argoproj.io"}}),
            1);

  // The same status again (a newer event, same statushash): no second write.
  auto again = cloudevents::EncodeMqtt(AgentStatusEvent(2, AppStatus()));
  ASSERT_TRUE(again.ok());
  ASSERT_TRUE(Accepted((*agent)->Publish(agent_topic, *again)));
  ASSERT_TRUE(mmi::testing::WaitFor(
      [&] {
        return MetricValue(sink.registry(), "mmi_status_events_dropped_total",
                           {{"reason", "duplicate"}}) >= 1;
      },
      seconds(30)))
      << "the resent status was not recognised as a duplicate";
  EXPECT_EQ(MetricValue(sink.registry(), "mmi_status_updates_total", {{"result", "ok"}}), 1);

  // What was applied is durable for the next start.
  ASSERT_TRUE(mmi::testing::WaitFor(
      [&] {
        pqxx::connection conn(dsn);
        pqxx::nontransaction tx(conn);
        auto rows = tx.exec("SELECT health_status FROM resource_status");
        return rows.size() == 1 && rows[0][0].c_str() == std::string("Healthy");
      },
      seconds(10)));

  sink.RequestStop();
  sink.Stop();
  agent->reset();
}

}  // namespace
}  // namespace mmi::status_sink
