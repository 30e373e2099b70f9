// libFuzzer target: DecodeStructuredJson on arbitrary bytes. Accepted events must re-encode, and
// the re-encoded JSON must decode to the same event.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "libs/cloudevents/fuzz/fuzz_util.h"
#include "libs/cloudevents/json_format.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace mmi::cloudevents;  // NOLINT(google-build-using-namespace): fuzz entry point
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  auto event = DecodeStructuredJson(input);
  if (!event.ok()) {
    fuzz::CheckDecodeError(event.status());
    return 0;
  }
  auto encoded = EncodeStructuredJson(*event);
  fuzz::Check(encoded.ok(), "a decoded structured event does not re-encode");
  auto again = DecodeStructuredJson(*encoded);
  fuzz::Check(again.ok(), "re-encoded structured event does not decode");
  fuzz::Check(*again == *event, "structured JSON round trip changed the event");
  return 0;
}
