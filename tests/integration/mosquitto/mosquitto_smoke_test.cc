// Smoke test: a real mosquitto started by tests/peers/bin/start-mosquitto carries MQTT v5
// messages with user properties (the Maestro binding puts CloudEvent attributes there), over
// plain TCP and over TLS with client certificates.
#include <gtest/gtest.h>
#include <mqtt/async_client.h>

#include <chrono>

#include "tests/support/peer.h"

namespace mmi {
namespace {

using std::chrono::seconds;

mqtt::connect_options V5Options() {
  return mqtt::connect_options_builder()
      .mqtt_version(MQTTVERSION_5)
      .clean_start(true)
      .keep_alive_interval(seconds(30))
      .finalize();
}

void RoundTrip(const std::string& uri, mqtt::connect_options options) {
  mqtt::async_client sub(uri, "smoke-sub", mqtt::create_options(MQTTVERSION_5));
  mqtt::async_client pub(uri, "smoke-pub", mqtt::create_options(MQTTVERSION_5));
  sub.start_consuming();
  ASSERT_TRUE(sub.connect(options)->wait_for(seconds(10)));
  ASSERT_TRUE(sub.subscribe("sources/mmi/consumers/+/agentevents", 1)->wait_for(seconds(10)));
  ASSERT_TRUE(pub.connect(options)->wait_for(seconds(10)));

  mqtt::properties props;
  props.add(mqtt::property(mqtt::property::USER_PROPERTY, "ce-specversion", "1.0"));
  props.add(mqtt::property(mqtt::property::USER_PROPERTY, "ce-clustername", "cluster1"));
  props.add(mqtt::property(mqtt::property::CONTENT_TYPE, "application/json"));
  auto msg = mqtt::message_ptr_builder()
                 .topic("sources/mmi/consumers/cluster1/agentevents")
                 .payload(std::string(R"({"hello":"world"})"))
                 .qos(1)
                 .properties(props)
                 .finalize();
  ASSERT_TRUE(pub.publish(msg)->wait_for(seconds(10)));

  mqtt::const_message_ptr got;
  ASSERT_TRUE(sub.try_consume_message_for(&got, seconds(10))) << "no message within 10s";
  ASSERT_NE(got, nullptr);
  EXPECT_EQ(got->get_topic(), "sources/mmi/consumers/cluster1/agentevents");
  EXPECT_EQ(got->to_string(), R"({"hello":"world"})");
  EXPECT_EQ(got->get_qos(), 1);
  const auto& p = got->get_properties();
  EXPECT_EQ(mqtt::get<std::string>(p, mqtt::property::CONTENT_TYPE), "application/json");
  std::map<std::string, std::string> user;
  for (size_t i = 0; i < p.count(mqtt::property::USER_PROPERTY); ++i) {
    auto kv = mqtt::get<mqtt::string_pair>(p, mqtt::property::USER_PROPERTY, i);
    user[std::get<0>(kv)] = std::get<1>(kv);
  }
  EXPECT_EQ(user["ce-specversion"], "1.0");
  EXPECT_EQ(user["ce-clustername"], "cluster1");
  pub.disconnect()->wait();
  sub.disconnect()->wait();
}

TEST(MosquittoPeerTest, CarriesV5UserPropertiesOverPlainTcp) {
  MMI_START_PEER(broker, "mosquitto");
  RoundTrip("tcp://" + broker->Get("MQTT_HOST"), V5Options());
}

TEST(MosquittoPeerTest, CarriesV5MessagesOverMutualTls) {
  MMI_START_PEER(broker, "mosquitto");
  auto options = V5Options();
  options.set_ssl(mqtt::ssl_options_builder()
                      .trust_store(broker->Get("MQTT_CA_FILE"))
                      .key_store(broker->Get("MQTT_CLIENT_CERT_FILE"))
                      .private_key(broker->Get("MQTT_CLIENT_KEY_FILE"))
                      .enable_server_cert_auth(true)
                      .finalize());
  RoundTrip("ssl://" + broker->Get("MQTT_MTLS_HOST"), options);
}

TEST(MosquittoPeerTest, RefusesClientsWithoutACertificateOnTheMtlsListener) {
  MMI_START_PEER(broker, "mosquitto");
  auto options = V5Options();
  options.set_ssl(mqtt::ssl_options_builder().trust_store(broker->Get("MQTT_CA_FILE")).finalize());
  mqtt::async_client client("ssl://" + broker->Get("MQTT_MTLS_HOST"), "smoke-nocert",
                            mqtt::create_options(MQTTVERSION_5));
  EXPECT_THROW(client.connect(options)->wait(), mqtt::exception);
}

}  // namespace
}  // namespace mmi
