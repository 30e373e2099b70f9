#include "libs/transport/internal/intake.h"

#include <string>

namespace mmi::transport::internal {

IntakeResult Intake(std::size_t wire_bytes, std::size_t max_bytes,
                    absl::FunctionRef<absl::StatusOr<cloudevents::Event>()> decode,
                    TransportMetrics& metrics, IntakeLog& log, std::string_view where,
                    EventHandler& handler, AckFn ack) {
  const log::Logger& logger = log.logger;
  if (wire_bytes > max_bytes) {
    metrics.RecordRejected(RejectReason::kOversize);
    log.oversize.Add(where, {{"where", where},
                             {"bytes", static_cast<uint64_t>(wire_bytes)},
                             {"limit", static_cast<uint64_t>(max_bytes)}});
    std::move(ack)();
    return IntakeResult::kRejected;
  }
  absl::StatusOr<cloudevents::Event> event = decode();
  if (!event.ok()) {
    metrics.RecordRejected(RejectReason::kMalformed);
    log.malformed.Add(where, {{"where", where}, {"error", std::string(event.status().message())}});
    std::move(ack)();
    return IntakeResult::kRejected;
  }
  if (event->IsHeartbeat()) {
    std::move(ack)();
    return IntakeResult::kHeartbeat;
  }
  const cloudevents::ReceivedKind kind = cloudevents::ClassifyReceived(*event);
  metrics.RecordReceived(kind);
  if (logger.Enabled(log::Level::kDebug)) {
    logger.Debug("received event", {{"where", where},
                                    {"event_id", event->id},
                                    {"type", std::string(cloudevents::ReceivedKindName(kind))}});
  }
  handler(*std::move(event), std::move(ack));
  return IntakeResult::kDelivered;
}

}  // namespace mmi::transport::internal
