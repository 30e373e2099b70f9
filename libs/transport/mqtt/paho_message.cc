#include "libs/transport/mqtt/paho_message.h"

#include <mqtt/properties.h>

#include <utility>

namespace mmi::transport {

mqtt::message_ptr ToPahoMessage(const std::string& topic, int qos,
                                const cloudevents::MqttMessage& message) {
  mqtt::properties props;
  if (message.content_type.has_value()) {
    props.add(mqtt::property(mqtt::property::CONTENT_TYPE, *message.content_type));
  }
  for (const auto& [name, value] : message.user_properties) {
    props.add(mqtt::property(mqtt::property::USER_PROPERTY, name, value));
  }
  return mqtt::message_ptr_builder()
      .topic(topic)
      .payload(message.payload)
      .qos(qos)
      .retained(false)
      .properties(std::move(props))
      .finalize();
}

cloudevents::MqttMessage FromPahoMessage(const mqtt::message& message) {
  cloudevents::MqttMessage out;
  out.payload = message.get_payload_str();
  const mqtt::properties& props = message.get_properties();
  try {
    if (props.contains(mqtt::property::CONTENT_TYPE)) {
      out.content_type = mqtt::get<std::string>(props, mqtt::property::CONTENT_TYPE);
    }
    const std::size_t n = props.count(mqtt::property::USER_PROPERTY);
    out.user_properties.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      auto pair = mqtt::get<mqtt::string_pair>(props, mqtt::property::USER_PROPERTY, i);
      out.user_properties.emplace_back(std::get<0>(pair), std::get<1>(pair));
    }
  } catch (const std::exception&) {
    // A property of an unexpected type: keep what was read; the decoder rejects the rest.
  }
  return out;
}

std::size_t WireSize(const cloudevents::MqttMessage& message) {
  return cloudevents::MqttMessageSize(message);
}

}  // namespace mmi::transport
