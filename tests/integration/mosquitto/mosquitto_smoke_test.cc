// Smoke test: a real mosquitto started by tests/peers/bin/start-mosquitto carries MQTT v5
// messages with user properties (the Maestro binding puts CloudEvent attributes there), over
// plain TCP and over TLS with client certificates.
#include <gtest/gtest.h>

#include <chrono>
#include <map>

#include "libs/transport/mqtt/testing/mqtt_test_client.h"
#include "tests/support/peer.h"

namespace mmi {
namespace {

using transport::testing::MqttTestClient;
using transport::testing::MqttTestClientOptions;

void RoundTrip(MqttTestClientOptions options) {
  options.client_id = "smoke-sub";
  auto sub = MqttTestClient::Connect(options);
  ASSERT_TRUE(sub.ok()) << sub.status();
  ASSERT_EQ((*sub)->Subscribe("sources/mmi/consumers/+/agentevents"), std::vector<int>{1});
  options.client_id = "smoke-pub";
  auto pub = MqttTestClient::Connect(options);
  ASSERT_TRUE(pub.ok()) << pub.status();

  cloudevents::MqttMessage message;
  message.payload = R"({"hello":"world"})";
  message.content_type = "application/json";
  message.user_properties = {{"ce-specversion", "1.0"}, {"ce-clustername", "cluster1"}};
  ASSERT_EQ((*pub)->Publish("sources/mmi/consumers/cluster1/agentevents", message), 0);

  auto got = (*sub)->Next();
  ASSERT_TRUE(got.has_value()) << "no message within 10s";
  EXPECT_EQ(got->topic, "sources/mmi/consumers/cluster1/agentevents");
  EXPECT_EQ(got->message.payload, R"({"hello":"world"})");
  EXPECT_EQ(got->message.content_type, "application/json");
  std::map<std::string, std::string> user(got->message.user_properties.begin(),
                                          got->message.user_properties.end());
  EXPECT_EQ(user["ce-specversion"], "1.0");
  EXPECT_EQ(user["ce-clustername"], "cluster1");
}

TEST(MosquittoPeerTest, CarriesV5UserPropertiesOverPlainTcp) {
  MMI_START_PEER(broker, "mosquitto");
  RoundTrip({.host_port = broker->Get("MQTT_HOST")});
}

TEST(MosquittoPeerTest, CarriesV5MessagesOverMutualTls) {
  MMI_START_PEER(broker, "mosquitto");
  RoundTrip({.host_port = broker->Get("MQTT_MTLS_HOST"),
             .ca_file = broker->Get("MQTT_CA_FILE"),
             .cert_file = broker->Get("MQTT_CLIENT_CERT_FILE"),
             .key_file = broker->Get("MQTT_CLIENT_KEY_FILE")});
}

TEST(MosquittoPeerTest, RefusesClientsWithoutACertificateOnTheMtlsListener) {
  MMI_START_PEER(broker, "mosquitto");
  auto client = MqttTestClient::Connect({.host_port = broker->Get("MQTT_MTLS_HOST"),
                                         .client_id = "smoke-nocert",
                                         .ca_file = broker->Get("MQTT_CA_FILE")},
                                        std::chrono::seconds(5));
  EXPECT_FALSE(client.ok());
}

}  // namespace
}  // namespace mmi
