// The fleet simulator (tools/fleet-sim, agent side) and our source-side transports
// (libs/transport: MakePublisher / MakeSubscriber) talk through a real broker, mosquitto 2 (MQTT)
// and Kafka (KRaft): spec events published by the source reach the simulated agents, and the
// agents' status events, spec resync requests and status resync answers decode on the source side
// with the feedback value and a statushash that matches the data (maestro-protocol.md §2.3, §2.5,
// §3, §6.4-§6.6). Proves both sides interoperate byte for byte over the wire.
#include <gtest/gtest.h>
#ifdef MMI_FLEET_SIM_IT_WITH_KAFKA
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafkacpp.h>

#include "tools/fleet-sim/kafka_agent_transport.h"
#endif

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "libs/cloudevents/event.h"
#include "libs/cloudevents/maestro_events.h"
#include "libs/cloudevents/manifest_bundle.h"
#include "libs/cloudevents/object_meta.h"
#include "libs/cloudevents/resource_id.h"
#include "libs/cloudevents/resync.h"
#include "libs/cloudevents/status_hash.h"
#include "libs/common/clock.h"
#include "libs/transport/factory.h"
#include "prometheus/registry.h"
#include "tests/support/peer.h"
#include "tests/support/wait.h"
#include "tools/fleet-sim/fleet_metrics.h"
#include "tools/fleet-sim/fleet_simulator.h"
#include "tools/fleet-sim/mqtt_agent_transport.h"

namespace mmi {
namespace {

using cloudevents::Event;
using nlohmann::json;
using std::chrono::seconds;

constexpr char kSource[] = "fleet-it-source";
constexpr int kClusters = 50;

std::string Cluster(int i) { return fleet_sim::ClusterName("sim-cluster-", i); }
std::string WorkName(int i) { return absl::StrCat("openshift-gitops-guestbook-", Cluster(i)); }
std::string ResourceId(int i) {
  return cloudevents::WorkResourceId(kSource, Cluster(i), WorkName(i));
}

cloudevents::Timestamp Now() {
  return std::chrono::time_point_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now());
}

// What the dispatcher sends for one pull-model Application (maestro-protocol.md §2.6).
Event CreateEvent(int i) {
  const std::string app = absl::StrCat("guestbook-", Cluster(i));
  cloudevents::ManifestBundle bundle;
  bundle.manifests.push_back(json{
      {"apiVersion", "argoproj.io/v1alpha1"},
      {"kind", "Application"},
      {"metadata", {{"name", app}, {"namespace", "openshift-gitops"}}},
      {"spec",
       {{"project", "default"},
        {"destination",
         {{"name", ""}, {"namespace", "guestbook"}, {"server", "https://kubernetes.default.svc"}}},
        {"source",
         {{"repoURL", "https://github.com/argoproj/argocd-example-apps.git"},
          {"path", "guestbook"},
          {"targetRevision", "HEAD"}}},
        {"syncPolicy", {{"automated", {{"prune", true}, {"selfHeal", true}}}}}}}});
  cloudevents::ManifestConfigOption config;
  config.resource_identifier = {"argoproj.io", "applications", app, "openshift-gitops"};
  cloudevents::FeedbackRule rule;
  rule.type = std::string(cloudevents::kFeedbackJsonPaths);
  rule.json_paths.push_back({"status", std::nullopt, ".status"});
  config.feedback_rules.push_back(rule);
  cloudevents::UpdateStrategy strategy;
  strategy.type = std::string(cloudevents::kUpdateStrategyServerSideApply);
  strategy.server_side_apply = cloudevents::ServerSideApplyConfig{};
  config.update_strategy = strategy;
  bundle.manifest_configs.push_back(config);

  Event event;
  event.id = cloudevents::NewUuidV4();
  event.source = kSource;
  event.type = std::string(cloudevents::kSpecCreateRequestType);
  event.data_content_type = std::string(cloudevents::kJsonContentType);
  event.time = Now();
  event.SetString(cloudevents::kExtClusterName, Cluster(i));
  event.SetString(cloudevents::kExtOriginalSource, "");
  event.SetString(cloudevents::kExtResourceId, ResourceId(i));
  event.SetInteger(cloudevents::kExtResourceVersion, 1);
  cloudevents::ObjectMeta meta;
  meta.name = WorkName(i);
  meta.namespace_ = Cluster(i);
  meta.uid = ResourceId(i);
  EXPECT_TRUE(cloudevents::SetObjectMeta(event, meta).ok());
  event.SetString(cloudevents::kExtLogTracing, "{}");
  event.data = *cloudevents::EncodeManifestBundle(bundle);
  return event;
}

Event DeleteEvent(int i) {
  Event event;
  event.id = cloudevents::NewUuidV4();
  event.source = kSource;
  event.type = std::string(cloudevents::kSpecDeleteRequestType);
  event.time = Now();
  event.SetString(cloudevents::kExtClusterName, Cluster(i));
  event.SetString(cloudevents::kExtOriginalSource, "");
  event.SetString(cloudevents::kExtResourceId, ResourceId(i));
  event.SetInteger(cloudevents::kExtResourceVersion, 1);
  event.SetTimestamp(cloudevents::kExtDeletionTimestamp, Now());
  return event;
}

// Everything the source-side subscriber received.
class Inbox {
 public:
  void Add(Event event) {
    absl::MutexLock lock(&mu_);
    events_.push_back(std::move(event));
  }
  std::vector<Event> Matching(std::string_view type) {
    absl::MutexLock lock(&mu_);
    std::vector<Event> out;
    for (const Event& e : events_) {
      if (e.type == type) {
        out.push_back(e);
      }
    }
    return out;
  }
  // The latest event of `type` for each resource ID.
  std::map<std::string, Event> ByResource(std::string_view type) {
    std::map<std::string, Event> out;
    for (Event& e : Matching(type)) {
      if (auto id = e.ResourceId(); id.ok()) {
        out[*id] = std::move(e);
      }
    }
    return out;
  }

 private:
  absl::Mutex mu_;
  std::vector<Event> events_ ABSL_GUARDED_BY(mu_);
};

// A broker, the source-side settings for it and the simulator's agent transport for it.
struct Wiring {
  std::unique_ptr<testing::PeerProcess> broker;
  transport::TransportSettings source;
  std::unique_ptr<fleet_sim::AgentTransport> agent;
};

void MqttWiring(Wiring& w) {
  auto broker = testing::PeerProcess::Start("mosquitto");
  ASSERT_TRUE(broker.ok()) << broker.status();
  w.broker = *std::move(broker);
  const std::string host = w.broker->Get("MQTT_HOST");
  transport::MqttSettings source;
  source.broker_host = host;
  source.source_id = kSource;
  source.client_id = "fleet-it-src";
  source.shared_group = "";
  source.keep_alive = seconds(10);
  source.reconnect_backoff = {std::chrono::milliseconds(100), std::chrono::milliseconds(1'000), 2.0,
                              0.2};
  w.source = source;
  fleet_sim::MqttAgentSettings agent;
  agent.broker_host = host;
  agent.source_id = kSource;
  agent.client_id = "fleet-it-agents";
  agent.keep_alive = seconds(10);
  w.agent = std::make_unique<fleet_sim::MqttAgentTransport>(agent);
}

// One process speaks for thousands of agents: its publishes are bounded by max_in_flight
// (backpressure on the caller), and every one of a burst still gets its PUBACK.
TEST(FleetSimMqttTest, PublishWaitsWhileMaxInFlightPublishesAwaitTheirPuback) {
  auto broker = testing::PeerProcess::Start("mosquitto");
  ASSERT_TRUE(broker.ok()) << broker.status();
  fleet_sim::MqttAgentSettings settings;
  settings.broker_host = (*broker)->Get("MQTT_HOST");
  settings.source_id = kSource;
  settings.client_id = "fleet-it-inflight";
  settings.max_in_flight = 3;
  fleet_sim::MqttAgentTransport agents(settings);
  ASSERT_TRUE(agents.Start([](fleet_sim::ReceivedEvent) {}, [](fleet_sim::Subscription) {}).ok());
  ASSERT_TRUE(testing::WaitFor([&] { return agents.connected(); }, seconds(30)));
  constexpr int kBurst = 500;
  absl::Mutex mu;
  int ok = 0;
  int failed = 0;
  std::size_t most_in_flight = 0;
  for (int i = 0; i < kBurst; ++i) {
    Event event;
    event.id = absl::StrCat("e-", i);
    event.source = "fleet-it";
    event.type = "io.open-cluster-management.works.v1alpha1.manifestbundles.status.update_request";
    event.SetString(cloudevents::kExtClusterName, Cluster(i % 7));
    event.SetString(cloudevents::kExtResourceId, ResourceId(i));
    event.SetInteger(cloudevents::kExtResourceVersion, 1);
    event.data = R"({"status":{}})";
    agents.Publish(std::move(event), [&](absl::Status status) {
      absl::MutexLock lock(&mu);
      ++(status.ok() ? ok : failed);
    });
    most_in_flight = std::max(most_in_flight, agents.InFlight());
  }
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        absl::MutexLock lock(&mu);
        return ok + failed == kBurst;
      },
      seconds(60)));
  absl::MutexLock lock(&mu);
  EXPECT_EQ(ok, kBurst);
  EXPECT_EQ(failed, 0);
  EXPECT_LE(most_in_flight, 3u);
  EXPECT_GE(most_in_flight, 1u);
  agents.Stop();
}

#ifdef MMI_FLEET_SIM_IT_WITH_KAFKA
void CreateTopic(rd_kafka_t* rk, const std::string& topic) {
  char error[512];
  rd_kafka_NewTopic_t* new_topic = rd_kafka_NewTopic_new(topic.c_str(), 1, 1, error, sizeof(error));
  ASSERT_NE(new_topic, nullptr) << error;
  rd_kafka_queue_t* queue = rd_kafka_queue_new(rk);
  rd_kafka_CreateTopics(rk, &new_topic, 1, nullptr, queue);
  rd_kafka_event_t* event = rd_kafka_queue_poll(queue, 60'000);
  EXPECT_NE(event, nullptr) << "CreateTopics timed out for " << topic;
  if (event != nullptr) {
    EXPECT_EQ(rd_kafka_event_error(event), RD_KAFKA_RESP_ERR_NO_ERROR)
        << rd_kafka_event_error_string(event);
    rd_kafka_event_destroy(event);
  }
  rd_kafka_queue_destroy(queue);
  rd_kafka_NewTopic_destroy(new_topic);
}

void KafkaWiring(Wiring& w) {
  auto broker = testing::PeerProcess::Start("kafka");
  ASSERT_TRUE(broker.ok()) << broker.status();
  w.broker = *std::move(broker);
  const std::string bootstrap = w.broker->Get("KAFKA_BOOTSTRAP");
  {
    // One partition each, so that the order of events across clusters is the topic's order.
    std::string error;
    std::unique_ptr<RdKafka::Conf> conf(RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
    conf->set("bootstrap.servers", bootstrap, error);
    std::unique_ptr<RdKafka::Producer> admin(RdKafka::Producer::create(conf.get(), error));
    ASSERT_NE(admin, nullptr) << error;
    CreateTopic(admin->c_ptr(), "sourceevents");
    CreateTopic(admin->c_ptr(), "agentevents");
  }
  transport::KafkaSettings source;
  source.bootstrap_servers = bootstrap;
  source.source_id = kSource;
  source.advanced_config = {{"topic.metadata.refresh.interval.ms", "1000"}};
  w.source = source;
  fleet_sim::KafkaAgentSettings agent;
  agent.bootstrap_servers = bootstrap;
  agent.group_id = "fleet-it-agents";
  agent.advanced_config = {{"topic.metadata.refresh.interval.ms", "1000"}};
  w.agent = std::make_unique<fleet_sim::KafkaAgentTransport>(agent);
}
#endif

class FleetSimInteropTest : public ::testing::TestWithParam<std::string> {
 protected:
  void Publish(Event event) {
    absl::Notification done;
    absl::Status result;
    publisher_->Publish(std::move(event), [&](absl::Status status) {
      result = status;
      done.Notify();
    });
    ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(30)));
    ASSERT_TRUE(result.ok()) << result;
  }

  std::unique_ptr<transport::Publisher> publisher_;
};

TEST_P(FleetSimInteropTest, SimulatedAgentsAnswerOurSourceTransportPerTheSpec) {
  Wiring wiring;
  if (GetParam() == "mqtt") {
    MqttWiring(wiring);
  }
#ifdef MMI_FLEET_SIM_IT_WITH_KAFKA
  if (GetParam() == "kafka") {
    KafkaWiring(wiring);
  }
#endif
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_NE(wiring.agent, nullptr);

  // Source side: our production transport, as the dispatcher / status-sink configure it.
  prometheus::Registry source_registry;
  const transport::TransportDeps deps{RealClock::Instance(), source_registry};
  auto publisher = transport::MakePublisher(wiring.source, deps);
  ASSERT_TRUE(publisher.ok()) << publisher.status();
  publisher_ = *std::move(publisher);
  auto subscriber = transport::MakeSubscriber(wiring.source, deps);
  ASSERT_TRUE(subscriber.ok()) << subscriber.status();
  Inbox inbox;
  ASSERT_TRUE((*subscriber)
                  ->Start(
                      [&inbox](Event event, transport::AckFn ack) {
                        inbox.Add(std::move(event));
                        std::move(ack)();
                      },
                      nullptr)
                  .ok());
  ASSERT_TRUE(publisher_->Start().ok());
  ASSERT_TRUE(testing::WaitFor(
      [&] { return (*subscriber)->connected() && publisher_->connected(); }, seconds(60)))
      << "the source-side transport did not connect";

  // Agent side: the simulator, in process, with no churn during the test.
  prometheus::Registry sim_registry;
  fleet_sim::FleetMetrics sim_metrics(sim_registry);
  fleet_sim::SimulatorSettings sim;
  sim.fleet.cluster_prefix = "sim-cluster-";
  sim.fleet.clusters = kClusters;
  sim.fleet.agent.refresh_min = seconds(3600);
  sim.fleet.agent.refresh_max = seconds(3600);
  sim.tick = std::chrono::milliseconds(200);
  fleet_sim::FleetSimulator simulator(sim, *wiring.agent, RealClock::Instance(), sim_metrics);
  ASSERT_TRUE(simulator.Start().ok());

  // On connect every simulated agent asks for its specs (§6.5).
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        return inbox.Matching(cloudevents::kSpecResyncRequestType).size() >=
               static_cast<std::size_t>(kClusters);
      },
      seconds(60)))
      << "spec resync requests: " << inbox.Matching(cloudevents::kSpecResyncRequestType).size();
  std::set<std::string> resync_clusters;
  for (const Event& e : inbox.Matching(cloudevents::kSpecResyncRequestType)) {
    resync_clusters.insert(*e.ClusterName());
    EXPECT_EQ(e.source, *e.ClusterName() + "-work-agent");
    EXPECT_EQ(*e.OriginalSource(), "");
    EXPECT_EQ(*e.data, R"({"resourceVersions":[]})");
  }
  EXPECT_EQ(resync_clusters.size(), static_cast<std::size_t>(kClusters));

  // One Application per cluster.
  for (int i = 1; i <= kClusters; ++i) {
    Publish(CreateEvent(i));
  }
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        return inbox.ByResource(cloudevents::kStatusUpdateRequestType).size() >=
               static_cast<std::size_t>(kClusters);
      },
      seconds(60)))
      << "statuses: " << inbox.ByResource(cloudevents::kStatusUpdateRequestType).size();

  std::map<std::string, Event> statuses = inbox.ByResource(cloudevents::kStatusUpdateRequestType);
  for (int i = 1; i <= kClusters; ++i) {
    SCOPED_TRACE(Cluster(i));
    ASSERT_EQ(statuses.count(ResourceId(i)), 1u);
    const Event& status = statuses.at(ResourceId(i));
    EXPECT_EQ(status.source, Cluster(i) + "-work-agent");
    EXPECT_EQ(*status.ClusterName(), Cluster(i));
    EXPECT_EQ(*status.OriginalSource(), kSource);
    EXPECT_EQ(*status.ResourceVersion(), 1);  // arrived as the string "1" over MQTT
    EXPECT_TRUE(status.SequenceId().ok());
    // The statushash is SHA-256 of the status data as received.
    const json data = json::parse(*status.data);
    auto hash = cloudevents::StatusHashOfData(data);
    ASSERT_TRUE(hash.ok()) << hash.status();
    EXPECT_EQ(*status.StatusHash(), *hash);
    auto decoded = cloudevents::ManifestBundleStatusOf(status);
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    ASSERT_EQ(decoded->conditions.size(), 2u);
    EXPECT_EQ(decoded->conditions[0].type, "Applied");
    EXPECT_EQ(decoded->conditions[1].type, "Available");
    ASSERT_EQ(decoded->resource_status.size(), 1u);
    ASSERT_EQ(decoded->resource_status[0].status_feedback.size(), 1u);
    const auto& feedback = decoded->resource_status[0].status_feedback[0];
    EXPECT_EQ(feedback.name, "status");
    ASSERT_EQ(feedback.field_value.type, cloudevents::FieldValueType::kJsonRaw);
    const json& app = feedback.field_value.json_raw_value;
    EXPECT_EQ(app["sync"]["status"], "Synced");
    EXPECT_EQ(app["health"]["status"], "Healthy");
    EXPECT_TRUE(app.contains("reconciledAt"));
  }

  // Status resync (§6.6): a matching hash gets nothing, a stale one gets the current status.
  const std::string hash8 = *statuses.at(ResourceId(8)).StatusHash();
  const std::string hash7 = *statuses.at(ResourceId(7)).StatusHash();
  cloudevents::ResourceStatusHashList up_to_date;
  up_to_date.status_hashes.push_back({ResourceId(8), hash8});
  auto request8 = cloudevents::MakeStatusResyncRequest(kSource, Cluster(8), up_to_date,
                                                       cloudevents::NewUuidV4(), Now());
  ASSERT_TRUE(request8.ok()) << request8.status();
  Publish(*std::move(request8));
  cloudevents::ResourceStatusHashList stale;
  stale.status_hashes.push_back({ResourceId(7), "0000000000000000"});
  auto request7 = cloudevents::MakeStatusResyncRequest(kSource, Cluster(7), stale,
                                                       cloudevents::NewUuidV4(), Now());
  ASSERT_TRUE(request7.ok()) << request7.status();
  Publish(*std::move(request7));
  ASSERT_TRUE(testing::WaitFor(
      [&] { return !inbox.Matching(cloudevents::kStatusResyncResponseType).empty(); }, seconds(30)))
      << "no status resync response";
  const auto answers = inbox.ByResource(cloudevents::kStatusResyncResponseType);
  ASSERT_EQ(answers.size(), 1u);
  ASSERT_EQ(answers.count(ResourceId(7)), 1u);
  EXPECT_EQ(*answers.at(ResourceId(7)).StatusHash(), hash7);
  EXPECT_EQ(*answers.at(ResourceId(7)).ClusterName(), Cluster(7));

  // Delete (§6.4): the agent confirms with Deleted=True.
  Publish(DeleteEvent(1));
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        auto latest = inbox.ByResource(cloudevents::kStatusUpdateRequestType);
        auto it = latest.find(ResourceId(1));
        if (it == latest.end()) {
          return false;
        }
        auto decoded = cloudevents::ManifestBundleStatusOf(it->second);
        return decoded.ok() && cloudevents::IsDeleted(*decoded);
      },
      seconds(30)))
      << "no Deleted status";

  EXPECT_EQ(sim_metrics.SpecsReceived("create_request").Value(), kClusters);
  EXPECT_EQ(sim_metrics.SpecsReceived("delete_request").Value(), 1);
  EXPECT_EQ(sim_metrics.status_resyncs_answered.Value(), 2);
  EXPECT_EQ(sim_metrics.Rejected("malformed").Value(), 0);
  EXPECT_EQ(sim_metrics.publish_failures.Value(), 0);
  EXPECT_EQ(simulator.application_count(), static_cast<std::size_t>(kClusters - 1));

  // After the broker restarts (MQTT: Clean Start, nothing queued) every agent asks for its
  // specs again, now listing the works it holds (§6.5).
  if (GetParam() == "mqtt") {
    const std::size_t before = inbox.Matching(cloudevents::kSpecResyncRequestType).size();
    const auto restart = testing::RunCommand(testing::PeersBinDir() + "/restart-mosquitto '" +
                                             wiring.broker->data_dir() + "'");
    ASSERT_EQ(restart.exit_code, 0) << restart.output;
    ASSERT_TRUE(testing::WaitFor([&] { return simulator.resync_rounds() >= 2; }, seconds(60)))
        << "the simulator did not resubscribe";
    ASSERT_TRUE(testing::WaitFor(
        [&] {
          return inbox.Matching(cloudevents::kSpecResyncRequestType).size() >=
                 before + static_cast<std::size_t>(kClusters);
        },
        seconds(60)))
        << "no second round of spec resync requests reached the source";
    bool listed = false;
    for (const Event& e : inbox.Matching(cloudevents::kSpecResyncRequestType)) {
      if (*e.ClusterName() != Cluster(2)) {
        continue;
      }
      auto list = cloudevents::DecodeResourceVersionList(*e.data);
      ASSERT_TRUE(list.ok()) << list.status();
      if (list->resource_versions.size() == 1 &&
          list->resource_versions[0].resource_id == ResourceId(2) &&
          list->resource_versions[0].resource_version == 1) {
        listed = true;
      }
    }
    EXPECT_TRUE(listed) << "the resync request after the restart should list the held work";
  }

  simulator.Stop();
  publisher_->Stop();
  (*subscriber)->Stop();
}

std::vector<std::string> Transports() {
  std::vector<std::string> out = {"mqtt"};
#ifdef MMI_FLEET_SIM_IT_WITH_KAFKA
  out.push_back("kafka");
#endif
  return out;
}

INSTANTIATE_TEST_SUITE_P(Brokers, FleetSimInteropTest, ::testing::ValuesIn(Transports()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace mmi
