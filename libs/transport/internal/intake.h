// The receive path every Subscriber shares: size check, decode, heartbeat filter, metrics, log,
// hand-over to the handler.
#pragma once

#include <cstddef>
#include <string_view>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "libs/cloudevents/event.h"
#include "libs/common/clock.h"
#include "libs/common/log.h"
#include "libs/common/log_summary.h"
#include "libs/transport/metrics.h"
#include "libs/transport/subscriber.h"

namespace mmi::transport::internal {

enum class IntakeResult { kDelivered, kHeartbeat, kRejected };

// A Subscriber's receive-path log: rejected messages are summed up per kind (log_summary.h), so a
// peer sending a flood of bad messages cannot flood the log; each is still counted by its metric.
struct IntakeLog {
  IntakeLog(const log::Logger& logger, const Clock& clock)
      : logger(logger),
        oversize(logger, "rejected oversize messages", clock),
        malformed(logger, "rejected malformed messages", clock) {}

  // Logs the summaries whose interval has passed (call from the subscriber's periodic loop).
  void Flush() {
    oversize.Flush();
    malformed.Flush();
  }

  const log::Logger& logger;
  log::WarnSummary oversize;
  log::WarnSummary malformed;
};

// Rejects the message when `wire_bytes` exceeds `max_bytes` (reason oversize, without decoding)
// or when `decode` fails (reason malformed); both are counted, logged at warn (summed up) with
// `where` (a topic or partition, never the payload) and acknowledged through `ack` so that a
// poison message never blocks the stream. Heartbeats are acknowledged and dropped. Anything else
// is counted by kind and passed to `handler` with `ack`.
IntakeResult Intake(std::size_t wire_bytes, std::size_t max_bytes,
                    absl::FunctionRef<absl::StatusOr<cloudevents::Event>()> decode,
                    TransportMetrics& metrics, IntakeLog& log, std::string_view where,
                    EventHandler& handler, AckFn ack);

}  // namespace mmi::transport::internal
