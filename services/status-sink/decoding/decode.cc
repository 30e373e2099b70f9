#include "services/status-sink/decoding/decode.h"

#include <utility>

#include "services/status-sink/decoding/one_pass_decoder.h"

namespace mmi::status_sink {

std::variant<StatusReport, Rejection> DecodeStatusReport(const cloudevents::Event& event,
                                                         bool ignore_resource_health_messages) {
  // One decoder per thread (in the sink: the loop thread) keeps its parse buffers warm.
  thread_local OnePassDecoder decoder;
  auto decoded = decoder.Decode(event, ignore_resource_health_messages);
  if (decoded.has_value()) {
    return *std::move(decoded);
  }
  return DecodeStatusReportFull(event);
}

}  // namespace mmi::status_sink
