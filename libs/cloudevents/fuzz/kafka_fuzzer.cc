// libFuzzer target: DecodeKafka on a framed record (see fuzz_util.h; the first line is the
// content-type header). Accepted events with an OCM type must re-encode idempotently.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "libs/cloudevents/fuzz/fuzz_util.h"
#include "libs/cloudevents/kafka_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace mmi::cloudevents;  // NOLINT(google-build-using-namespace): fuzz entry point
  auto framed = fuzz::ParseFramed(std::string_view(reinterpret_cast<const char*>(data), size));
  KafkaRecord record;
  record.topic = "agentevents";
  record.value = std::move(framed.payload);
  if (framed.content_type.has_value()) {
    record.headers.emplace_back("content-type", *framed.content_type);
  }
  for (auto& header : framed.properties) {
    record.headers.push_back(std::move(header));
  }
  auto event = DecodeKafka(record);
  if (!event.ok()) {
    fuzz::CheckDecodeError(event.status());
    return 0;
  }
  auto first = EncodeKafka(*event);
  if (!first.ok()) {
    // Only an event whose type is not an OCM type may be refused.
    fuzz::Check(!event->ParsedType().ok(),
                "a decoded Kafka event with an OCM type does not encode");
    return 0;
  }
  auto decoded = DecodeKafka(*first);
  fuzz::Check(decoded.ok(), "re-encoded Kafka record does not decode");
  auto second = EncodeKafka(*decoded);
  fuzz::Check(second.ok() && *second == *first, "Kafka binary encoding is not idempotent");
  return 0;
}
