// Conversion between the codec's plain MqttMessage and libmosquitto's PUBLISH payload and MQTT 5
// properties, for the agent-side libmosquitto clients of fleet-sim, the benches and the tests (the
// services' own client writes the same properties: mqtt5::AppendPublish).
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "libs/cloudevents/mqtt_codec.h"

struct mosquitto_message;
struct mqtt5__property;

namespace mmi::transport {

struct MosquittoPropertiesFree {
  void operator()(mqtt5__property* properties) const;
};
using MosquittoProperties = std::unique_ptr<mqtt5__property, MosquittoPropertiesFree>;

// The PUBLISH properties of a binary-mode event: Content Type (when set) and one User Property
// per pair, in order. kInvalidArgument when libmosquitto refuses one (e.g. invalid UTF-8). A
// message without properties gives a null pointer, which libmosquitto takes as "none".
absl::StatusOr<MosquittoProperties> ToMosquittoProperties(const cloudevents::MqttMessage& message);

// The payload, Content Type and User Properties of a received PUBLISH.
cloudevents::MqttMessage FromMosquittoMessage(const mosquitto_message& message,
                                              const mqtt5__property* properties);

}  // namespace mmi::transport
