#include "libs/cloudevents/mqtt_codec.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "libs/cloudevents/internal/attributes.h"
#include "libs/cloudevents/json_format.h"

namespace mmi::cloudevents {
std::size_t MqttMessageSize(const MqttMessage& message) {
  std::size_t size = message.payload.size();
  if (message.content_type.has_value()) {
    size += message.content_type->size();
  }
  for (const auto& [name, value] : message.user_properties) {
    size += name.size() + value.size();
  }
  return size;
}

absl::StatusOr<MqttMessage> EncodeMqtt(const Event& event, MqttContentMode mode,
                                       const CodecLimits& limits) {
  MqttMessage message;
  if (mode == MqttContentMode::kStructured) {
    auto json = EncodeStructuredJson(event, limits);
    if (!json.ok()) {
      return json.status();
    }
    message.payload = *std::move(json);
    message.content_type = std::string(kStructuredJsonContentType);
    return message;
  }
  if (auto status = internal::ValidateForEncoding(event); !status.ok()) {
    return status;
  }
  if (auto status = internal::CheckBinaryModeContentType(event.data_content_type); !status.ok()) {
    return status;
  }
  message.user_properties = internal::BinaryAttributes(event);
  message.content_type = event.data_content_type;
  if (event.data.has_value()) {
    message.payload = *event.data;
  }
  if (const std::size_t size = MqttMessageSize(message); size > limits.max_event_bytes) {
    return internal::SizeLimitError("encoded MQTT message", size, limits);
  }
  return message;
}

absl::StatusOr<Event> DecodeMqtt(const MqttMessage& message, const CodecLimits& limits) {
  if (const std::size_t size = MqttMessageSize(message); size > limits.max_event_bytes) {
    return internal::SizeLimitError("MQTT message", size, limits);
  }
  if (message.content_type.has_value() && IsStructuredContentType(*message.content_type)) {
    return DecodeStructuredJson(message.payload, limits);
  }
  return internal::DecodeBinaryAttributes(message.user_properties, message.content_type,
                                          message.payload, "MQTT user property");
}

}  // namespace mmi::cloudevents
