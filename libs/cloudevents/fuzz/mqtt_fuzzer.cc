// libFuzzer target: DecodeMqtt on a framed message (see fuzz_util.h). Accepted events must
// re-encode in binary mode, and binary encoding must be idempotent after one decode.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "libs/cloudevents/fuzz/fuzz_util.h"
#include "libs/cloudevents/mqtt_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace mmi::cloudevents;  // NOLINT(google-build-using-namespace): fuzz entry point
  auto framed = fuzz::ParseFramed(std::string_view(reinterpret_cast<const char*>(data), size));
  MqttMessage message{std::move(framed.payload), std::move(framed.content_type),
                      std::move(framed.properties)};
  auto event = DecodeMqtt(message);
  if (!event.ok()) {
    fuzz::CheckDecodeError(event.status());
    return 0;
  }
  auto first = EncodeMqtt(*event);
  fuzz::Check(first.ok(), "a decoded MQTT event does not re-encode");
  auto decoded = DecodeMqtt(*first);
  fuzz::Check(decoded.ok(), "re-encoded MQTT message does not decode");
  auto second = EncodeMqtt(*decoded);
  fuzz::Check(second.ok() && *second == *first, "MQTT binary encoding is not idempotent");
  // Structured mode: refused only when JSON `data` is not JSON (binary mode does not look at the
  // payload); otherwise equal up to the normalisation of JSON data (compact, sorted keys).
  auto structured = EncodeMqtt(*event, MqttContentMode::kStructured);
  if (!structured.ok()) {
    fuzz::Check(
        structured.status().code() == absl::StatusCode::kInvalidArgument && event->data.has_value(),
        "a decoded MQTT event without data does not encode in structured mode");
    return 0;
  }
  auto from_structured = DecodeMqtt(*structured);
  fuzz::Check(from_structured.ok(), "MQTT structured message does not decode");
  Event without_data = *event;
  Event structured_without_data = *from_structured;
  without_data.data.reset();
  structured_without_data.data.reset();
  fuzz::Check(structured_without_data == without_data,
              "MQTT structured round trip changed the attributes");
  fuzz::Check(from_structured->data.has_value() == event->data.has_value(),
              "MQTT structured round trip lost or invented data");
  auto twice = EncodeMqtt(*from_structured, MqttContentMode::kStructured);
  fuzz::Check(twice.ok(), "a normalised event does not encode in structured mode");
  auto normalised = DecodeMqtt(*twice);
  fuzz::Check(normalised.ok() && *normalised == *from_structured,
              "MQTT structured round trip is not stable after normalisation");
  return 0;
}
