// OutboxGate: the reconciler's back-pressure on the outbox. Once ReconcilerSettings::max_outbox
// events wait for the broker or are in flight (Outbox::ready_or_in_flight(), not those in retry
// backoff), the gate closes: the reconciler takes no new keys until the outbox, which calls
// `drained` then (no polling), is down to half. 0 = no bound. The gate reports itself in
// mmi_dispatcher_outbox_paused and logs each pause and resume.
//
// Thread safety: loop thread only. All collaborators are borrowed and outlive it.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>

#include "libs/common/clock.h"
#include "services/dispatcher/apps/metrics.h"
#include "services/dispatcher/apps/outbox.h"

namespace mmi::dispatcher {

class OutboxGate {
 public:
  // `drained` runs on the loop when the gate opens again.
  OutboxGate(Outbox& outbox, DispatcherMetrics& metrics, const Clock& clock, size_t max_outbox,
             std::function<void()> drained);

  // True while the gate is closed; closes it when the outbox holds max_outbox events ready or
  // in flight.
  bool Full();

 private:
  void OnDrained();

  Outbox& outbox_;
  DispatcherMetrics& metrics_;
  const Clock& clock_;
  const size_t max_outbox_;
  std::function<void()> drained_;
  bool paused_ = false;
  std::chrono::steady_clock::time_point paused_at_;
};

}  // namespace mmi::dispatcher
