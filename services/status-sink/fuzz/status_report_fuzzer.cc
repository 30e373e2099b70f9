// libFuzzer target: the status sink's one-pass decoder against the full path on arbitrary
// status events (the input forms are those of decoding/testing/decode_check.h: a status payload, a
// metadata extension, or a framed MQTT message). Both must give the same answer, and the
// one-pass decoder alone must never answer differently from the full path, its material hash
// included; nor DecodeStatusOrBundleReport when the resource is known in manifest delivery.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "libs/cloudevents/fuzz/fuzz_util.h"
#include "services/status-sink/decoding/decode.h"
#include "services/status-sink/decoding/one_pass_decoder.h"
#include "services/status-sink/decoding/status_report.h"
#include "services/status-sink/decoding/testing/decode_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace mmi::status_sink;  // NOLINT(google-build-using-namespace): fuzz entry point
  static OnePassDecoder one_pass;
  const auto event =
      testing::FuzzEvent(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!event.has_value()) {
    return 0;
  }
  const auto full = DecodeStatusReportFull(*event);
  mmi::cloudevents::fuzz::Check(testing::ReportDifference(full, DecodeStatusReport(*event)).empty(),
                                "DecodeStatusReport differs from DecodeStatusReportFull");
  // The material hash the decoder writes from simdjson's index, for either setting, is
  // checked against MaterialHash() of the full path's tree (ReportDifference).
  for (const bool ignore_health_messages : {false, true}) {
    if (auto answer = one_pass.Decode(*event, ignore_health_messages)) {
      mmi::cloudevents::fuzz::Check(testing::ReportDifference(full, *answer).empty(),
                                    "the one-pass decoder differs from the full path");
    }
  }
  // Manifest delivery: the bundle decoded alone for a resource known in the mode answers as the
  // slow path does.
  mmi::cloudevents::fuzz::Check(
      testing::ReportDifference(DecodeStatusOrBundleReport(*event, false, false),
                                DecodeStatusOrBundleReport(*event, false, true))
          .empty(),
      "the bundle decode alone differs from the slow path");
  return 0;
}
