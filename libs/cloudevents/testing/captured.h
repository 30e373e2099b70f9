// Test-only: the traffic captured from the real Maestro server and work agent running against
// this project (../shared/spec/samples/captured/, its README says what and how). Each record is
// one MQTT PUBLISH as `mosquitto_sub -V mqttv5 -F %j` printed it: topic, content type, the `ce-`
// user properties and the payload as text.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "libs/cloudevents/mqtt_codec.h"

namespace mmi::cloudevents::testing {

inline constexpr std::string_view kCapturedSourceEvents = "sourceevents.jsonl";  // to the agents
inline constexpr std::string_view kCapturedAgentEvents = "agentevents.jsonl";    // from the agents

struct CapturedRecord {
  int line = 0;  // 1-based line of the file
  std::string topic;
  MqttMessage message;
};

// Every record of `file` (one of the names above) in file order. kNotFound when the file is
// missing, kInvalidArgument naming the line when a record is not what mosquitto_sub prints.
absl::StatusOr<std::vector<CapturedRecord>> ReadCaptured(std::string_view file);

// The whole of another file of the capture directory (e.g. "rest-resource-bundle.json").
absl::StatusOr<std::string> ReadCapturedFile(std::string_view file);

}  // namespace mmi::cloudevents::testing
