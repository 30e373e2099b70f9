// libFuzzer target: DecodeGrpcBytes on arbitrary bytes (a serialized io.cloudevents.v1.CloudEvent).
// Accepted events that re-encode must survive a serialize/parse/decode round trip unchanged.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "libs/cloudevents/fuzz/fuzz_util.h"
#include "libs/cloudevents/grpc_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace mmi::cloudevents;  // NOLINT(google-build-using-namespace): fuzz entry point
  auto event = DecodeGrpcBytes(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!event.ok()) {
    fuzz::CheckDecodeError(event.status());
    return 0;
  }
  auto message = EncodeGrpc(*event);
  if (!message.ok()) {
    // Heartbeats are passed through without validation; everything else must re-encode.
    fuzz::Check(event->IsHeartbeat(), "a decoded gRPC event does not re-encode");
    return 0;
  }
  std::string bytes;
  fuzz::Check(message->SerializeToString(&bytes), "re-encoded gRPC event does not serialize");
  auto again = DecodeGrpcBytes(bytes);
  fuzz::Check(again.ok(), "re-encoded gRPC event does not decode");
  fuzz::Check(*again == *event, "gRPC round trip changed the event");
  return 0;
}
