// Conversion between the codec's plain MqttMessage and Paho MQTT v5 messages.
#pragma once

#include <mqtt/message.h>

#include <cstddef>
#include <string>

#include "libs/cloudevents/mqtt_codec.h"

namespace mmi::transport {

// A PUBLISH for `topic` at `qos`, never retained: payload, Content Type property (when set) and
// one User Property per pair, in order.
mqtt::message_ptr ToPahoMessage(const std::string& topic, int qos,
                                const cloudevents::MqttMessage& message);

// The payload, Content Type and User Properties of a received PUBLISH. Never throws.
cloudevents::MqttMessage FromPahoMessage(const mqtt::message& message);

// Payload + Content Type + User Property bytes: what the size limit is checked against.
std::size_t WireSize(const cloudevents::MqttMessage& message);

}  // namespace mmi::transport
