// DeletionCheck: over gRPC, asks Maestro's REST API whether a resource whose delete request is
// still unconfirmed is gone (maestro-protocol.md rule 17: a deletion is complete on Deleted=True
// *or* a REST 404). Maestro sends the Deleted status once, to the source subscribers connected at
// that moment, then forgets the resource: a confirmation the status sink missed (sink down or
// re-subscribing) is never sent again, a resent delete is answered OK with nothing sent, and a
// status resync does not mention it. So every time Maestro accepts a resend of an unconfirmed
// delete request (DeleteResendDelay: 1 min, doubling to 16 min; ChangeRecorder::OnPublished), the
// resource is also submitted here:
//   404 -> `gone(id)`: confirmed, exactly as the status sink's Deleted would be (DeletionFinisher)
//   200 -> nothing (Maestro still holds it, marked deleting: the agent has not confirmed yet)
//   anything else -> counted; the first failure of a run is logged (warn), the rest at debug, and
//       the recovery once (info); no look-up for `error_pause`, then the resource is asked again.
//
// Bounded: at most `max_requests_per_second` GETs start per second and `max_in_flight` run at
// once (each blocks a worker-pool thread for up to the REST timeout); a resource queued or in
// flight is not queued twice; at most `max_queued` wait (more are dropped and counted, and
// checked at their next resend). 300,000 unconfirmed deletions at the default 20/s take 4 h 10 min
// to check once; one lost confirmation takes its first resend delay plus the queue.
//
// Thread safety: loop thread only (the look-ups run on the worker pool and answer on the loop).
// Collaborators are borrowed and outlive it.
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "libs/common/clock.h"
#include "libs/common/loop.h"
#include "services/dispatcher/apps/metrics.h"
#include "services/dispatcher/apps/reconciler_settings.h"

namespace mmi::dispatcher {

class DeletionCheck {
 public:
  // Blocking, on a worker thread: true = Maestro holds the resource (200), false = gone (404),
  // an error otherwise.
  using Lookup = std::function<absl::StatusOr<bool>(const std::string& resource_id)>;
  struct Deps {
    Loop& loop;
    WorkerPool& workers;
    const Clock& clock;
    DispatcherMetrics& metrics;
    Lookup exists;
    // Whether `resource_id` still waits for its deletion confirmation (checked before the GET
    // and again on its answer).
    std::function<bool(const std::string& resource_id)> waiting;
    // Maestro answered 404: the deletion is confirmed.
    std::function<void(const std::string& resource_id)> gone;
  };
  DeletionCheck(Deps deps, DeletionCheckSettings settings);

  // Queues a look-up of `resource_id` (a resent, still unconfirmed delete request).
  void Submit(const std::string& resource_id);
  size_t queued() const { return queue_.size(); }

 private:
  // Starts the look-ups the bounds allow now, and schedules itself for the next allowed start.
  void Pump();
  void PumpAt(std::chrono::steady_clock::time_point when);
  void OnAnswer(const std::string& resource_id, const absl::StatusOr<bool>& exists);
  void Unqueue(const std::string& resource_id);

  Deps deps_;
  const DeletionCheckSettings settings_;
  const std::chrono::nanoseconds interval_;  // between two GET starts

  std::deque<std::string> queue_;
  absl::flat_hash_set<std::string> pending_;  // queued or in flight
  int in_flight_ = 0;
  std::chrono::steady_clock::time_point next_start_{};
  bool pump_scheduled_ = false;
  // Failed look-ups since the last answer (0: REST answers); logs once per outage.
  int64_t failures_ = 0;
};

}  // namespace mmi::dispatcher
