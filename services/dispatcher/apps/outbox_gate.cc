#include "services/dispatcher/apps/outbox_gate.h"

#include <cstdint>
#include <utility>

#include "services/dispatcher/apps/internal/reconciler_log.h"

namespace mmi::dispatcher {
OutboxGate::OutboxGate(Outbox& outbox, DispatcherMetrics& metrics, const Clock& clock,
                       size_t max_outbox, std::function<void()> drained)
    : outbox_(outbox),
      metrics_(metrics),
      clock_(clock),
      max_outbox_(max_outbox),
      drained_(std::move(drained)) {}

bool OutboxGate::Full() {
  if (paused_) {
    return true;
  }
  if (max_outbox_ == 0) {
    return false;
  }
  const size_t count = outbox_.ready_or_in_flight();
  if (count < max_outbox_) {
    return false;
  }
  paused_ = true;
  paused_at_ = clock_.MonotonicNow();
  metrics_.outbox_paused().Set(1);
  const size_t resume_at = max_outbox_ / 2;
  internal::ReconcilerLog().Warn(
      "outbox full: taking no new keys until the broker has taken some of it",
      {{"ready_or_in_flight", static_cast<int64_t>(count)},
       {"max_outbox", static_cast<int64_t>(max_outbox_)},
       {"resume_at", static_cast<int64_t>(resume_at)}});
  outbox_.NotifyWhenDrainedTo(resume_at, [this] { OnDrained(); });
  return true;
}

void OutboxGate::OnDrained() {
  paused_ = false;
  metrics_.outbox_paused().Set(0);
  const auto paused =
      std::chrono::duration_cast<std::chrono::milliseconds>(clock_.MonotonicNow() - paused_at_);
  internal::ReconcilerLog().Info(
      "outbox drained: taking keys again",
      {{"paused_ms", static_cast<int64_t>(paused.count())},
       {"ready_or_in_flight", static_cast<int64_t>(outbox_.ready_or_in_flight())}});
  drained_();
}

}  // namespace mmi::dispatcher
