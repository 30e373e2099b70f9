// MQTT v5 binding as the Go OCM SDK speaks it (§3.4). No MQTT client dependency: the transport
// copies `MqttMessage` into a PUBLISH (payload, Content Type property, User Properties).
//
// Binary mode (what Go sends): `datacontenttype` -> Content Type property; every other attribute
// and extension -> a User Property named `ce-<name>` with the canonical string value
// (CanonicalString); data -> payload (empty when the event has none).
// Structured mode: Content Type `application/cloudevents+json`, payload = JSON format event.
//
// Decoding: Content Type starting with `application/cloudevents` -> structured; else a
// `ce-specversion` User Property -> binary; else kInvalidArgument (Go drops such messages).
// In binary mode every extension arrives as a String; use Event's tolerant accessors.
// User Property names are matched case-insensitively; properties without the `ce-` prefix are
// ignored; a repeated `ce-` property is kInvalidArgument. Thread-safe (pure functions).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "libs/cloudevents/codec_options.h"
#include "libs/cloudevents/event.h"

namespace mmi::cloudevents {

struct MqttMessage {
  std::string payload;
  std::optional<std::string> content_type;
  std::vector<std::pair<std::string, std::string>> user_properties;
  friend bool operator==(const MqttMessage&, const MqttMessage&) = default;
};

enum class MqttContentMode { kBinary, kStructured };

// What `message` weighs against CodecLimits::max_event_bytes: payload, content type and user
// properties (names and values).
std::size_t MqttMessageSize(const MqttMessage& message);

absl::StatusOr<MqttMessage> EncodeMqtt(const Event& event,
                                       MqttContentMode mode = MqttContentMode::kBinary,
                                       const CodecLimits& limits = {});

absl::StatusOr<Event> DecodeMqtt(const MqttMessage& message, const CodecLimits& limits = {});

}  // namespace mmi::cloudevents
