// The contract suite for the MQTT transport against a real mosquitto 2 (MQTT 5) started by
// tests/peers/bin/start-mosquitto, through its mTLS listener: the services' publisher
// (libmosquitto) and subscriber (our own receive path). The agent side is a plain libmosquitto
// client (MqttTestClient) that behaves like an OCM agent for any cluster: it subscribes the
// source's per-cluster sourceevents topics and publishes binary-mode events on agentevents topics
// (§3.2, §3.4).
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "libs/cloudevents/mqtt_codec.h"
#include "libs/transport/mqtt/testing/mqtt_test_client.h"
#include "tests/integration/transport/contract_harness.h"
#include "tests/support/peer.h"
#include "tests/support/wait.h"

namespace mmi::transport::contract {
namespace {

using std::chrono::seconds;

constexpr std::size_t kLimit = 256 * 1024;

class MqttHarness final : public Harness {
 public:
  std::string name() const override { return "mqtt"; }

  void SetUp(const std::string& source_id) override {
    // A broker per test (it starts in about a second); the test fails if it cannot start.
    auto broker = mmi::testing::PeerProcess::Start("mosquitto");
    ASSERT_TRUE(broker.ok()) << broker.status();
    broker_ = *std::move(broker);
    source_id_ = source_id;
    settings_.broker_host = broker_->Get("MQTT_MTLS_HOST");
    settings_.source_id = source_id;
    settings_.client_id = source_id;
    settings_.tls = {true, broker_->Get("MQTT_CA_FILE"), broker_->Get("MQTT_CLIENT_CERT_FILE"),
                     broker_->Get("MQTT_CLIENT_KEY_FILE")};
    settings_.keep_alive = seconds(5);
    settings_.publish_timeout = std::chrono::milliseconds(10'000);
    settings_.reconnect_backoff = {std::chrono::milliseconds(100), std::chrono::milliseconds(1'000),
                                   2.0, 0.2};
    settings_.limits.max_event_bytes = kLimit;

    // The agent: plain TCP listener of the same broker; after a broker restart it reconnects
    // and subscribes again (Clean Start).
    auto agent = testing::MqttTestClient::Connect({.host_port = broker_->Get("MQTT_HOST"),
                                                   .client_id = source_id + "-agent",
                                                   .keep_alive_s = 5,
                                                   .reconnect = true});
    ASSERT_TRUE(agent.ok()) << agent.status();
    agent_ = *std::move(agent);
    agent_->OnMessage([this](testing::MqttReceived received) {
      auto event = cloudevents::DecodeMqtt(received.message);
      absl::MutexLock lock(&mu_);
      if (event.ok()) {
        received_.push_back(*std::move(event));
      } else {
        ++agent_decode_errors_;
      }
    });
    const std::vector<int> granted =
        agent_->Subscribe(absl::StrCat("sources/", source_id, "/consumers/+/sourceevents"));
    ASSERT_TRUE(granted.size() == 1 && granted[0] < 0x80) << "the agent could not subscribe";
  }

  TransportClients MakeClients(Clock& clock, prometheus::Registry& registry) override {
    auto clients =
        transport::MakeClients(TransportSettings(settings_), TransportDeps{clock, registry});
    EXPECT_TRUE(clients.ok()) << clients.status();
    return clients.ok() ? *std::move(clients) : TransportClients{};
  }

  bool UsePersistentSession() override {
    settings_.session_expiry = std::chrono::hours(1);
    return true;
  }

  void AgentSend(const cloudevents::Event& event) override {
    auto encoded = cloudevents::EncodeMqtt(event);
    ASSERT_TRUE(encoded.ok()) << encoded.status();
    const std::string cluster = *event.ClusterName();
    Publish(AgentTopic(cluster), *encoded);
  }
  void AgentSendMalformed() override {
    // An MQTT 3.1.1-style message: no properties, so not a CloudEvent (§3.1, §8.4).
    cloudevents::MqttMessage bare;
    bare.payload = R"({"hello":"world"})";
    Publish(AgentTopic("cluster1"), bare);
  }
  void AgentSendOversize() override {
    auto encoded = cloudevents::EncodeMqtt(OversizeSeed());
    ASSERT_TRUE(encoded.ok()) << encoded.status();
    encoded->payload = std::string(kLimit + 1, 'x');
    Publish(AgentTopic("cluster1"), *encoded);
  }
  std::vector<cloudevents::Event> AgentReceived() override {
    absl::MutexLock lock(&mu_);
    EXPECT_EQ(agent_decode_errors_, 0) << "the agent could not decode what the source sent";
    return received_;
  }
  void RestartBroker() override {
    const int subacks = agent_->subacks();
    const auto result = mmi::testing::RunCommand(
        mmi::testing::PeersBinDir() + "/restart-mosquitto '" + broker_->data_dir() + "'");
    ASSERT_EQ(result.exit_code, 0) << result.output;
    // Without a session nothing published before the agent resubscribes reaches it.
    ASSERT_TRUE(mmi::testing::WaitFor([&] { return agent_->subacks() > subacks; }, seconds(30)))
        << "the agent did not resubscribe after the restart";
  }
  bool RedeliversUnacked() const override { return false; }
  // mosquitto's CONNACK Receive Maximum: its max_inflight_messages (default 20; tests/peers
  // start-mosquitto leaves it).
  size_t PublisherMaxInFlight() const override { return 20; }

 private:
  std::string AgentTopic(const std::string& cluster) const {
    return absl::StrCat("sources/", source_id_, "/consumers/", cluster, "/agentevents");
  }
  static cloudevents::Event OversizeSeed() {
    cloudevents::Event e;
    e.id = "oversize";
    e.source = "cluster1-work-agent";
    e.type = std::string(cloudevents::kStatusUpdateRequestType);
    e.SetString(cloudevents::kExtClusterName, "cluster1");
    return e;
  }
  void Publish(const std::string& topic, const cloudevents::MqttMessage& message) {
    // The agent's own client may be reconnecting right after a broker restart: retry briefly.
    const auto deadline = std::chrono::steady_clock::now() + seconds(20);
    int code = -1;
    while (std::chrono::steady_clock::now() < deadline) {
      code = agent_->Publish(topic, message);
      if (code >= 0 && code < 0x80) {
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    FAIL() << "agent publish failed: PUBACK reason code " << code;
  }

  std::unique_ptr<mmi::testing::PeerProcess> broker_;
  std::string source_id_;
  MqttSettings settings_;
  std::unique_ptr<testing::MqttTestClient> agent_;
  absl::Mutex mu_;
  std::vector<cloudevents::Event> received_ ABSL_GUARDED_BY(mu_);
  int agent_decode_errors_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace

std::unique_ptr<Harness> MakeMqttHarness() { return std::make_unique<MqttHarness>(); }

}  // namespace mmi::transport::contract
