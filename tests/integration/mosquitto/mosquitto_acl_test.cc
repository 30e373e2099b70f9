// examples/mosquitto-acl.conf on a real mosquitto 2 (tests/peers/bin/start-mosquitto with
// ACL_FILE=, which opens only the mTLS listener, the certificate CN being the username): with
// real MQTT 5 clients holding certificates for cluster-a, cluster-b, mmi.dispatcher and
// mmi.status-sink, each work agent may publish only its own cluster's agentevents and receives
// only its own sourceevents (and the status resync broadcast); the dispatcher and the status sink
// can do exactly their part, on the topics and shared-subscription groups of
// examples/values-mqtt.yaml (libs/transport/mqtt/mqtt_topics.cc).
//
// A denied PUBLISH is answered with PUBACK 0x87 (Not authorized) and dropped. mosquitto 2.0.11
// grants any SUBSCRIBE and checks read access per message, so "cannot read" is proven by
// delivery: a forbidden message, then an allowed one from the same publisher; the subscriber's
// first message must be the allowed one (one publisher's messages reach a subscriber in order),
// and nothing else may be queued.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_join.h"
#include "libs/transport/mqtt/testing/mqtt_test_client.h"
#include "tests/support/peer.h"

namespace mmi {
namespace {

using std::chrono::seconds;

constexpr char kSource[] = "sources/app-work-client";
constexpr int kNotAuthorized = 0x87;

std::string SourceEvents(const std::string& cluster) {
  return std::string(kSource) + "/consumers/" + cluster + "/sourceevents";
}
std::string AgentEvents(const std::string& cluster) {
  return std::string(kSource) + "/consumers/" + cluster + "/agentevents";
}
std::string SourceBroadcast() { return std::string(kSource) + "/sourcebroadcast"; }
// What each service subscribes (values-mqtt.yaml: transportOverrides.sharedGroup).
std::string SharedAgentEvents(const std::string& group) {
  return "$share/" + group + "/" + std::string(kSource) + "/consumers/+/agentevents";
}

class MosquittoAclTest : public ::testing::Test {
 protected:
  // The ACL files, joined in order (start-mosquitto ACL_FILE=).
  virtual std::string AclFiles() const {
    return std::string(MMI_SOURCE_DIR) + "/examples/mosquitto-acl.conf";
  }

  void SetUp() override {
    auto broker = testing::PeerProcess::Start(
        "mosquitto", {"ACL_FILE=" + AclFiles(),
                      "CLIENTS=cluster-a,cluster-b,mmi.dispatcher,mmi.status-sink,fleet-sim.test"});
    ASSERT_TRUE(broker.ok()) << broker.status();
    broker_ = std::move(*broker);
    host_ = broker_->Get("MQTT_MTLS_HOST");
  }

  using Client = std::unique_ptr<transport::testing::MqttTestClient>;

  // An MQTT 5 client holding the certificate of `cn` (CLIENTS=), connected (or null, which
  // WaitConnected() reports). `claimed_username` is sent in CONNECT; the broker must ignore it
  // for the certificate's CN.
  Client& Connect(const std::string& cn, const std::string& claimed_username = "") {
    const std::string dir = broker_->Get("MQTT_CLIENTS_DIR");
    return ConnectWith(cn, dir + "/" + cn + ".crt", dir + "/" + cn + ".key", claimed_username);
  }

  Client& ConnectWith(const std::string& name, const std::string& cert, const std::string& key,
                      const std::string& claimed_username = "") {
    auto client = transport::testing::MqttTestClient::Connect(
        {.host_port = host_,
         .client_id = "acl-" + name + "-" + std::to_string(clients_.size()),
         .ca_file = broker_->Get("MQTT_CA_FILE"),
         .cert_file = cert,
         .key_file = key,
         .username = claimed_username,
         .password = claimed_username.empty() ? "" : "ignored"});
    if (!client.ok()) {
      failures_.push_back(name + " could not connect: " + std::string(client.status().message()));
    }
    clients_.push_back(client.ok() ? *std::move(client) : nullptr);
    return clients_.back();
  }

  // Fails the test if a Connect() since the last call did not connect.
  void WaitConnected() {
    std::vector<std::string> failures;
    failures.swap(failures_);
    ASSERT_TRUE(failures.empty()) << absl::StrJoin(failures, "; ");
  }

  static void Subscribe(Client& client, const std::string& filter) {
    const std::vector<int> codes = client->Subscribe(filter, 1);
    ASSERT_FALSE(codes.empty()) << "SUBSCRIBE " << filter << ": no SUBACK";
    for (int code : codes) {
      ASSERT_LT(code, 0x80) << "SUBSCRIBE " << filter << " refused";
    }
  }

  // The PUBACK reason code of one QoS 1 PUBLISH: < 0x80 accepted (0 or 0x10 No matching
  // subscribers), 0x87 Not authorized; -1 when no PUBACK came.
  static int Publish(Client& client, const std::string& topic, const std::string& payload) {
    cloudevents::MqttMessage message;
    message.payload = payload;
    return client->Publish(topic, message, 1);
  }

  // The next message `client` receives, as "<topic> <payload>" ("" after 10 s).
  static std::string Next(Client& client) {
    auto received = client->Next();
    return received.has_value() ? received->topic + " " + received->message.payload : "";
  }

  // Whatever is already queued for `client` (nothing, when the ACL held).
  static std::vector<std::string> Queued(Client& client) {
    std::vector<std::string> out;
    for (auto& received : client->Drain()) {
      out.push_back(received.topic + " " + received.message.payload);
    }
    return out;
  }

  std::unique_ptr<testing::PeerProcess> broker_;
  std::string host_;
  std::deque<Client> clients_;  // a deque: Connect() hands out references into it
  std::vector<std::string> failures_;
};

TEST_F(MosquittoAclTest, AnAgentPublishesOnlyToItsOwnClustersAgentEvents) {
  auto& dispatcher = Connect("mmi.dispatcher");
  auto& sink = Connect("mmi.status-sink");
  auto& agent_a = Connect("cluster-a");
  ASSERT_NO_FATAL_FAILURE(WaitConnected());
  Subscribe(dispatcher, SharedAgentEvents("mmi-dispatcher"));
  Subscribe(sink, SharedAgentEvents("mmi-status-sink"));

  // Denied: another cluster's agentevents, and any source-side topic (an agent is no source).
  EXPECT_EQ(Publish(agent_a, AgentEvents("cluster-b"), "forged-status"), kNotAuthorized);
  EXPECT_EQ(Publish(agent_a, SourceEvents("cluster-a"), "forged-spec"), kNotAuthorized);
  EXPECT_EQ(Publish(agent_a, SourceEvents("cluster-b"), "forged-spec"), kNotAuthorized);
  EXPECT_EQ(Publish(agent_a, SourceBroadcast(), "forged-resync"), kNotAuthorized);

  // Allowed: its own agentevents, for any source id; both services receive it, and it is the
  // first thing they receive (the forged status above was not delivered).
  EXPECT_LT(Publish(agent_a, AgentEvents("cluster-a"), "status-a"), 0x80);
  EXPECT_LT(Publish(agent_a, "sources/maestro/consumers/cluster-a/agentevents", "status-m"), 0x80);
  EXPECT_EQ(Next(dispatcher), AgentEvents("cluster-a") + " status-a");
  EXPECT_EQ(Next(sink), AgentEvents("cluster-a") + " status-a");
  EXPECT_EQ(absl::StrJoin(Queued(dispatcher), ", "), "");
  EXPECT_EQ(absl::StrJoin(Queued(sink), ", "), "");
}

TEST_F(MosquittoAclTest, AnAgentReceivesOnlyItsOwnClustersSourceEventsAndTheBroadcast) {
  auto& agent_a = Connect("cluster-a");
  auto& agent_b = Connect("cluster-b");
  // More connections with cluster-a's certificate try to read more: cluster-b's topic, every
  // cluster's, everything. One filter each, so that no message arrives twice.
  auto& snoop_b = Connect("cluster-a");
  auto& snoop_plus = Connect("cluster-a");
  auto& snoop_all = Connect("cluster-a");
  auto& dispatcher = Connect("mmi.dispatcher");
  auto& sink = Connect("mmi.status-sink");
  ASSERT_NO_FATAL_FAILURE(WaitConnected());
  Subscribe(agent_a, SourceEvents("cluster-a"));
  Subscribe(agent_a, SourceBroadcast());
  Subscribe(agent_b, SourceEvents("cluster-b"));
  Subscribe(agent_b, SourceBroadcast());
  Subscribe(snoop_b, SourceEvents("cluster-b"));
  Subscribe(snoop_b, SourceEvents("cluster-a"));
  Subscribe(snoop_plus, SourceEvents("+"));
  Subscribe(snoop_all, "#");

  // cluster-b's spec event and status resync request reach cluster-b...
  ASSERT_LT(Publish(dispatcher, SourceEvents("cluster-b"), "spec-b"), 0x80);
  ASSERT_LT(Publish(sink, SourceEvents("cluster-b"), "resync-b"), 0x80);
  EXPECT_EQ(Next(agent_b), SourceEvents("cluster-b") + " spec-b");
  EXPECT_EQ(Next(agent_b), SourceEvents("cluster-b") + " resync-b");

  // ...and not cluster-a: the same publishers then address cluster-a, and that is the first
  // thing each cluster-a connection receives.
  ASSERT_LT(Publish(dispatcher, SourceEvents("cluster-a"), "spec-a"), 0x80);
  for (auto* client : {&agent_a, &snoop_b, &snoop_plus, &snoop_all}) {
    EXPECT_EQ(Next(*client), SourceEvents("cluster-a") + " spec-a");
  }
  ASSERT_LT(Publish(sink, SourceBroadcast(), "resync-all"), 0x80);
  for (auto* client : {&agent_a, &agent_b, &snoop_all}) {
    EXPECT_EQ(Next(*client), SourceBroadcast() + " resync-all");
  }
  // Wait for nothing: anything more would have been queued before the messages above.
  for (auto* client : {&agent_a, &agent_b, &snoop_b, &snoop_plus, &snoop_all}) {
    EXPECT_EQ(absl::StrJoin(Queued(*client), ", "), "");
  }
}

TEST_F(MosquittoAclTest, TheDispatcherPublishesSpecEventsAndReadsAgentEventsOnly) {
  auto& agent_a = Connect("cluster-a");
  auto& agent_b = Connect("cluster-b");
  auto& dispatcher = Connect("mmi.dispatcher");
  ASSERT_NO_FATAL_FAILURE(WaitConnected());
  Subscribe(agent_a, SourceEvents("cluster-a"));
  Subscribe(agent_b, SourceEvents("cluster-b"));
  Subscribe(agent_b, SourceBroadcast());
  Subscribe(dispatcher, SharedAgentEvents("mmi-dispatcher"));
  // Subscribed to everything, it still receives only agentevents of its source.
  Subscribe(dispatcher, "#");

  // Denied: posing as an agent, another source id, the broadcast (only the sink sends status
  // resync requests).
  EXPECT_EQ(Publish(dispatcher, AgentEvents("cluster-a"), "forged-status"), kNotAuthorized);
  EXPECT_EQ(Publish(dispatcher, "sources/maestro/consumers/cluster-a/sourceevents", "x"),
            kNotAuthorized);
  EXPECT_EQ(Publish(dispatcher, SourceBroadcast(), "x"), kNotAuthorized);

  EXPECT_LT(Publish(dispatcher, SourceEvents("cluster-a"), "spec-a"), 0x80);
  EXPECT_LT(Publish(dispatcher, SourceEvents("cluster-b"), "spec-b"), 0x80);
  EXPECT_EQ(Next(agent_a), SourceEvents("cluster-a") + " spec-a");
  EXPECT_EQ(Next(agent_b), SourceEvents("cluster-b") + " spec-b");

  // A spec resync request from cluster-b reaches it (once per matching subscription), and
  // nothing of its own spec traffic did.
  ASSERT_LT(Publish(agent_b, AgentEvents("cluster-b"), "spec-resync-b"), 0x80);
  EXPECT_EQ(Next(dispatcher), AgentEvents("cluster-b") + " spec-resync-b");
  // (`#` matches it too: a second copy may follow.)
  std::vector<std::string> rest = Queued(dispatcher);
  rest.erase(std::remove(rest.begin(), rest.end(), AgentEvents("cluster-b") + " spec-resync-b"),
             rest.end());
  EXPECT_EQ(absl::StrJoin(rest, ", "), "") << "the dispatcher read more than agentevents";
  EXPECT_EQ(absl::StrJoin(Queued(agent_a), ", "), "");
  EXPECT_EQ(absl::StrJoin(Queued(agent_b), ", "), "");
}

TEST_F(MosquittoAclTest, TheStatusSinkReadsStatusAndAsksForResyncsOnly) {
  auto& agent_a = Connect("cluster-a");
  auto& sink = Connect("mmi.status-sink");
  ASSERT_NO_FATAL_FAILURE(WaitConnected());
  Subscribe(agent_a, SourceEvents("cluster-a"));
  Subscribe(agent_a, SourceBroadcast());
  Subscribe(sink, SharedAgentEvents("mmi-status-sink"));

  EXPECT_EQ(Publish(sink, AgentEvents("cluster-a"), "forged-status"), kNotAuthorized);
  EXPECT_EQ(Publish(sink, "sources/maestro/sourcebroadcast", "x"), kNotAuthorized);

  ASSERT_LT(Publish(agent_a, AgentEvents("cluster-a"), "status-a"), 0x80);
  EXPECT_EQ(Next(sink), AgentEvents("cluster-a") + " status-a");
  // A status resync request to one cluster, then to all.
  EXPECT_LT(Publish(sink, SourceEvents("cluster-a"), "resync-a"), 0x80);
  EXPECT_LT(Publish(sink, SourceBroadcast(), "resync-all"), 0x80);
  EXPECT_EQ(Next(agent_a), SourceEvents("cluster-a") + " resync-a");
  EXPECT_EQ(Next(agent_a), SourceBroadcast() + " resync-all");
  EXPECT_EQ(absl::StrJoin(Queued(sink), ", "), "");
  EXPECT_EQ(absl::StrJoin(Queued(agent_a), ", "), "");
}

TEST_F(MosquittoAclTest, TheCertificateIsTheIdentityNotTheConnectUsername) {
  auto& agent_b = Connect("cluster-b");
  auto& dispatcher = Connect("mmi.dispatcher");
  // cluster-a's certificate claiming to be cluster-b, and the dispatcher.
  auto& claims_b = Connect("cluster-a", "cluster-b");
  auto& claims_dispatcher = Connect("cluster-a", "mmi.dispatcher");
  // A certificate of the right CA whose CN the ACL does not name.
  auto& stranger = ConnectWith("stranger", broker_->Get("MQTT_CLIENT_CERT_FILE"),
                               broker_->Get("MQTT_CLIENT_KEY_FILE"));
  ASSERT_NO_FATAL_FAILURE(WaitConnected());
  Subscribe(agent_b, SourceEvents("cluster-b"));
  Subscribe(dispatcher, SharedAgentEvents("mmi-dispatcher"));

  EXPECT_EQ(Publish(claims_b, AgentEvents("cluster-b"), "forged"), kNotAuthorized);
  EXPECT_EQ(Publish(claims_dispatcher, SourceEvents("cluster-b"), "forged"), kNotAuthorized);
  EXPECT_EQ(Publish(stranger, AgentEvents("cluster-b"), "forged"), kNotAuthorized);
  EXPECT_EQ(Publish(stranger, SourceEvents("cluster-b"), "forged"), kNotAuthorized);

  ASSERT_LT(Publish(agent_b, AgentEvents("cluster-b"), "status-b"), 0x80);
  EXPECT_EQ(Next(dispatcher), AgentEvents("cluster-b") + " status-b");
  ASSERT_LT(Publish(dispatcher, SourceEvents("cluster-b"), "spec-b"), 0x80);
  EXPECT_EQ(Next(agent_b), SourceEvents("cluster-b") + " spec-b");
  EXPECT_EQ(absl::StrJoin(Queued(dispatcher), ", "), "");
  EXPECT_EQ(absl::StrJoin(Queued(agent_b), ", "), "");

  // No certificate, no connection (the only listener is the mTLS one).
  EXPECT_FALSE(
      transport::testing::MqttTestClient::Connect({.host_port = host_,
                                                   .client_id = "acl-anonymous",
                                                   .ca_file = broker_->Get("MQTT_CA_FILE")},
                                                  std::chrono::seconds(5))
          .ok());
}

// The e2e tests' tools/fleet-sim is one client for every cluster: a test-only identity
// (tests/peers/mosquitto/fleet-sim.acl.conf, appended to the example) lets it be every agent,
// and no more; the example's rules for real agents still hold.
class MosquittoAclWithFleetSimTest : public MosquittoAclTest {
 protected:
  std::string AclFiles() const override {
    return MosquittoAclTest::AclFiles() + "," + std::string(MMI_SOURCE_DIR) +
           "/tests/peers/mosquitto/fleet-sim.acl.conf";
  }
};

TEST_F(MosquittoAclWithFleetSimTest, FleetSimPlaysEveryAgentOfItsSource) {
  auto& fleet = Connect("fleet-sim.test");
  auto& dispatcher = Connect("mmi.dispatcher");
  auto& sink = Connect("mmi.status-sink");
  auto& agent_a = Connect("cluster-a");
  ASSERT_NO_FATAL_FAILURE(WaitConnected());
  // What tools/fleet-sim subscribes.
  Subscribe(fleet, SourceEvents("+"));
  Subscribe(fleet, SourceBroadcast());
  Subscribe(dispatcher, SharedAgentEvents("mmi-dispatcher"));

  EXPECT_EQ(Publish(fleet, SourceEvents("cluster-a"), "forged-spec"), kNotAuthorized);
  EXPECT_EQ(Publish(agent_a, AgentEvents("cluster-b"), "forged-status"), kNotAuthorized);
  ASSERT_LT(Publish(dispatcher, SourceEvents("cluster-a"), "spec-a"), 0x80);
  ASSERT_LT(Publish(dispatcher, SourceEvents("cluster-b"), "spec-b"), 0x80);
  ASSERT_LT(Publish(sink, SourceBroadcast(), "resync-all"), 0x80);
  EXPECT_EQ(Next(fleet), SourceEvents("cluster-a") + " spec-a");
  EXPECT_EQ(Next(fleet), SourceEvents("cluster-b") + " spec-b");
  EXPECT_EQ(Next(fleet), SourceBroadcast() + " resync-all");
  ASSERT_LT(Publish(fleet, AgentEvents("cluster-a"), "status-a"), 0x80);
  ASSERT_LT(Publish(fleet, AgentEvents("cluster-b"), "status-b"), 0x80);
  EXPECT_EQ(Next(dispatcher), AgentEvents("cluster-a") + " status-a");
  EXPECT_EQ(Next(dispatcher), AgentEvents("cluster-b") + " status-b");
  EXPECT_EQ(absl::StrJoin(Queued(fleet), ", "), "");
  EXPECT_EQ(absl::StrJoin(Queued(dispatcher), ", "), "");
}

}  // namespace
}  // namespace mmi
