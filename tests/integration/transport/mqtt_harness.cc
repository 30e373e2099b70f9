// The contract suite for the MQTT transport against a real mosquitto 2 (MQTT 5) started by
// tests/peers/bin/start-mosquitto, through its mTLS listener, once per client library of our
// publisher and subscriber (`library`: libmosquitto, the default, Paho, and the subscriber on
// the project's own receive path). The agent side is a
// raw Paho client that behaves like an OCM agent for any cluster: it subscribes the source's
// per-cluster sourceevents topics and publishes binary-mode events on agentevents topics (§3.2,
// §3.4).
#include <gtest/gtest.h>
#include <mqtt/async_client.h>

#include <atomic>
#include <memory>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "libs/cloudevents/mqtt_codec.h"
#include "tests/integration/transport/contract_harness.h"
#include "tests/support/peer.h"
#include "tests/support/wait.h"

namespace mmi::transport::contract {
namespace {

using std::chrono::seconds;

constexpr std::size_t kLimit = 256 * 1024;

mqtt::message_ptr ToMessage(const std::string& topic, const cloudevents::MqttMessage& m) {
  mqtt::properties props;
  if (m.content_type.has_value()) {
    props.add(mqtt::property(mqtt::property::CONTENT_TYPE, *m.content_type));
  }
  for (const auto& [k, v] : m.user_properties) {
    props.add(mqtt::property(mqtt::property::USER_PROPERTY, k, v));
  }
  return mqtt::message_ptr_builder()
      .topic(topic)
      .payload(m.payload)
      .qos(1)
      .properties(props)
      .finalize();
}

cloudevents::MqttMessage FromMessage(const mqtt::message& message) {
  cloudevents::MqttMessage m;
  m.payload = message.get_payload_str();
  const auto& props = message.get_properties();
  if (props.contains(mqtt::property::CONTENT_TYPE)) {
    m.content_type = mqtt::get<std::string>(props, mqtt::property::CONTENT_TYPE);
  }
  for (size_t i = 0; i < props.count(mqtt::property::USER_PROPERTY); ++i) {
    auto kv = mqtt::get<mqtt::string_pair>(props, mqtt::property::USER_PROPERTY, i);
    m.user_properties.emplace_back(std::get<0>(kv), std::get<1>(kv));
  }
  return m;
}

// Remembers that a SUBSCRIBE was acknowledged.
class SubscribedListener : public mqtt::iaction_listener {
 public:
  void on_success(const mqtt::token&) override { done_ = true; }
  void on_failure(const mqtt::token&) override {}
  bool done() const { return done_; }
  void Reset() { done_ = false; }

 private:
  std::atomic<bool> done_{false};
};

class MqttHarness final : public Harness {
 public:
  ~MqttHarness() override {
    if (agent_ != nullptr) {
      try {
        agent_->disconnect()->wait_for(seconds(5));
      } catch (const std::exception&) {
      }
    }
  }

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

    // The agent: plain TCP listener of the same broker.
    agent_ = std::make_unique<mqtt::async_client>("tcp://" + broker_->Get("MQTT_HOST"),
                                                  source_id + "-agent",
                                                  mqtt::create_options(MQTTVERSION_5));
    agent_->set_message_callback([this](mqtt::const_message_ptr message) {
      auto event = cloudevents::DecodeMqtt(FromMessage(*message));
      absl::MutexLock lock(&mu_);
      if (event.ok()) {
        received_.push_back(*std::move(event));
      } else {
        ++agent_decode_errors_;
      }
    });
    const std::string filter = absl::StrCat("sources/", source_id, "/consumers/+/sourceevents");
    agent_->set_connected_handler([this, filter](const std::string&) {
      // After the broker restarts, Clean Start means we must subscribe again.
      try {
        agent_->subscribe(filter, 1, nullptr, subscribed_listener_);
      } catch (const std::exception&) {
        // The reconnect that follows resubscribes.
      }
    });
    auto options = mqtt::connect_options_builder()
                       .mqtt_version(MQTTVERSION_5)
                       .clean_start(true)
                       .keep_alive_interval(seconds(5))
                       .automatic_reconnect(std::chrono::milliseconds(100), seconds(1))
                       .finalize();
    ASSERT_TRUE(agent_->connect(options)->wait_for(seconds(10)));
    ASSERT_TRUE(mmi::testing::WaitFor([this] { return subscribed_listener_.done(); }, seconds(10)))
        << "the agent could not subscribe";
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
    Publish(ToMessage(AgentTopic(cluster), *encoded));
  }
  void AgentSendMalformed() override {
    // An MQTT 3.1.1-style message: no properties, so not a CloudEvent (§3.1, §8.4).
    Publish(mqtt::message_ptr_builder()
                .topic(AgentTopic("cluster1"))
                .payload(std::string(R"({"hello":"world"})"))
                .qos(1)
                .finalize());
  }
  void AgentSendOversize() override {
    auto encoded = cloudevents::EncodeMqtt(OversizeSeed());
    ASSERT_TRUE(encoded.ok()) << encoded.status();
    encoded->payload = std::string(kLimit + 1, 'x');
    Publish(ToMessage(AgentTopic("cluster1"), *encoded));
  }
  std::vector<cloudevents::Event> AgentReceived() override {
    absl::MutexLock lock(&mu_);
    EXPECT_EQ(agent_decode_errors_, 0) << "the agent could not decode what the source sent";
    return received_;
  }
  void RestartBroker() override {
    subscribed_listener_.Reset();
    const auto result = mmi::testing::RunCommand(
        mmi::testing::PeersBinDir() + "/restart-mosquitto '" + broker_->data_dir() + "'");
    ASSERT_EQ(result.exit_code, 0) << result.output;
    // Without a session nothing published before the agent resubscribes reaches it.
    ASSERT_TRUE(mmi::testing::WaitFor([this] { return subscribed_listener_.done(); }, seconds(30)))
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
  void Publish(mqtt::message_ptr message) {
    // The agent's own client may be reconnecting right after a broker restart: retry briefly.
    const auto deadline = std::chrono::steady_clock::now() + seconds(20);
    std::string last_error = "no PUBACK";
    while (std::chrono::steady_clock::now() < deadline) {
      try {
        if (agent_->publish(message)->wait_for(seconds(10))) {
          return;
        }
      } catch (const mqtt::exception& e) {
        last_error = e.what();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    FAIL() << "agent publish failed: " << last_error;
  }

  std::unique_ptr<mmi::testing::PeerProcess> broker_;
  std::string source_id_;
  MqttSettings settings_;
  SubscribedListener subscribed_listener_;  // before agent_: outlives it
  std::unique_ptr<mqtt::async_client> agent_;
  absl::Mutex mu_;
  std::vector<cloudevents::Event> received_ ABSL_GUARDED_BY(mu_);
  int agent_decode_errors_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace

std::unique_ptr<Harness> MakeMqttHarness() { return std::make_unique<MqttHarness>(); }

}  // namespace mmi::transport::contract
