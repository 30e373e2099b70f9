// Limits every decoder enforces, so that no input (huge, deeply nested, malformed) can exhaust
// memory or the stack. One plain struct shared by all codecs; transports put it in their Settings.
#pragma once

#include <cstddef>

namespace mmi::cloudevents {

struct CodecLimits {
  // Largest encoded event accepted by a decoder or produced by an encoder: the whole JSON
  // document, MQTT payload + properties, Kafka value + headers, or serialized gRPC message.
  // Default 4 MiB = Maestro's gRPC receive limit (§4.8). Exceeding it is kInvalidArgument
  // ("exceeds the limit"): retrying the same event cannot succeed.
  std::size_t max_event_bytes = std::size_t{4} * 1024 * 1024;
  // Deepest JSON nesting accepted (objects + arrays), in the envelope and in payloads.
  int max_json_depth = 100;
};

}  // namespace mmi::cloudevents
