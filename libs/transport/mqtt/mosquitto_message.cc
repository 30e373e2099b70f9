#include "libs/transport/mqtt/mosquitto_message.h"

#include <mosquitto.h>
#include <mqtt_protocol.h>

#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"

namespace mmi::transport {

void MosquittoPropertiesFree::operator()(mqtt5__property* properties) const {
  mosquitto_property_free_all(&properties);
}

absl::StatusOr<MosquittoProperties> ToMosquittoProperties(const cloudevents::MqttMessage& message) {
  mosquitto_property* raw = nullptr;
  int rc = MOSQ_ERR_SUCCESS;
  if (message.content_type.has_value()) {
    rc = mosquitto_property_add_string(&raw, MQTT_PROP_CONTENT_TYPE, message.content_type->c_str());
  }
  for (const auto& [name, value] : message.user_properties) {
    if (rc != MOSQ_ERR_SUCCESS) {
      break;
    }
    rc = mosquitto_property_add_string_pair(&raw, MQTT_PROP_USER_PROPERTY, name.c_str(),
                                            value.c_str());
  }
  MosquittoProperties properties(raw);
  if (rc != MOSQ_ERR_SUCCESS) {
    return absl::InvalidArgumentError(
        absl::StrCat("MQTT publish failed: ", mosquitto_strerror(rc)));
  }
  return properties;
}

cloudevents::MqttMessage FromMosquittoMessage(const mosquitto_message& message,
                                              const mqtt5__property* properties) {
  cloudevents::MqttMessage out;
  if (message.payload != nullptr && message.payloadlen > 0) {
    out.payload.assign(static_cast<const char*>(message.payload),
                       static_cast<std::size_t>(message.payloadlen));
  }
  for (const mosquitto_property* p = properties; p != nullptr; p = mosquitto_property_next(p)) {
    const int id = mosquitto_property_identifier(p);
    char* name = nullptr;
    char* value = nullptr;
    if (id == MQTT_PROP_CONTENT_TYPE) {
      if (mosquitto_property_read_string(p, id, &value, false) != nullptr && value != nullptr) {
        out.content_type = std::string(value);
      }
    } else if (id == MQTT_PROP_USER_PROPERTY) {
      if (mosquitto_property_read_string_pair(p, id, &name, &value, false) != nullptr &&
          name != nullptr && value != nullptr) {
        out.user_properties.emplace_back(name, value);
      }
    }
    std::free(name);
    std::free(value);
  }
  return out;
}

}  // namespace mmi::transport
