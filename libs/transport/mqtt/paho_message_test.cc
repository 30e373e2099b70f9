#include "libs/transport/mqtt/paho_message.h"

#include <gtest/gtest.h>
#include <mqtt/async_client.h>

namespace mmi::transport {
namespace {

// Paho C initialises its heap bookkeeping when the first client is created and frees property
// memory only while it is initialised, so these tests keep an (unconnected) client alive, as the
// transport always does while it builds messages.
class PahoMessageTest : public ::testing::Test {
 protected:
  mqtt::async_client client_{"tcp://127.0.0.1:1883", "paho-message-test",
                             mqtt::create_options(MQTTVERSION_5)};
};

TEST_F(PahoMessageTest, RoundTripsPayloadContentTypeAndUserPropertiesInOrder) {
  cloudevents::MqttMessage original;
  original.payload = R"({"a":1})";
  original.content_type = "application/json";
  original.user_properties = {{"ce-specversion", "1.0"}, {"ce-id", "x"}, {"ce-originalsource", ""}};
  mqtt::message_ptr paho = ToPahoMessage("sources/mmi/consumers/c1/sourceevents", 1, original);
  EXPECT_EQ(paho->get_topic(), "sources/mmi/consumers/c1/sourceevents");
  EXPECT_EQ(paho->get_qos(), 1);
  EXPECT_FALSE(paho->is_retained());
  EXPECT_EQ(FromPahoMessage(*paho), original);
}

TEST_F(PahoMessageTest, OmitsTheContentTypeWhenTheEventHasNone) {
  cloudevents::MqttMessage original;
  original.user_properties = {{"ce-specversion", "1.0"}};
  mqtt::message_ptr paho = ToPahoMessage("t", 0, original);
  EXPECT_FALSE(paho->get_properties().contains(mqtt::property::CONTENT_TYPE));
  EXPECT_EQ(FromPahoMessage(*paho).content_type, std::nullopt);
}

TEST_F(PahoMessageTest, WireSizeCountsPayloadAndProperties) {
  cloudevents::MqttMessage message;
  message.payload = "12345";
  message.content_type = "ab";
  message.user_properties = {{"k", "vv"}};
  EXPECT_EQ(WireSize(message), 5u + 2u + 3u);
}

}  // namespace
}  // namespace mmi::transport
