// AckCheck: the dispatcher's half of the end-to-end acknowledgement (docs/reliability.md,
// finding 6). Every spec event stamps the resource's dispatch version into the spoke
// Application (payload.h, kDispatchVersionAnnotation); the agent reports it back as status
// feedback and the status sink saves it (`resource_status.acked_version`). A publish the broker
// accepted proves nothing about the agent: the real Maestro server can revert an accepted update
// (a concurrent status write) or never send it (its listeners reconnecting after a database
// restart, a broker connection closing under it). So every `interval` this asks the store which
// live resources a reporting agent has not acknowledged (store::AckWindow) and hands each to
// `republish`, which publishes it again as a new version (a changed payload: Maestro skips an
// identical one).
//
// Lost or only late (finding 8). Maestro sends spec events in the order it committed them, on one
// worker for all clusters (~20/s): behind a long queue an agent keeps reporting what it holds
// while its new changes wait for minutes, and publishing those again only lengthens the queue.
// So a listed resource is published again only on evidence that the source is past it:
//  * kOvertaken: a change of its cluster published `grace` later is acknowledged;
//  * kPassed: a change of any cluster published `timeout` later is acknowledged (the source
//    delivers in order, so it has sent this one);
//  * kStalled: no acknowledgement arrived since the last check (nothing newer acknowledged, no
//    more acknowledged): the source is not working through a queue. At most `max_while_stalled`
//    from the start of a stall until an acknowledgement arrives again, so a source that delivers
//    nothing is not fed more than that.
// Any other listed resource is left alone for now (`mmi_dispatcher_ack_waiting`): the
// acknowledgements still arrive, so it is queued, not lost.
// The same look-up also lists the hand-overs between the delivery modes whose first step the
// agent acknowledged (store::AcknowledgedHandovers) and hands each to `handover_acked`.
//
// Bounded: one look-up at a time, at most `max_per_check` resources per look-up; per resource the
// republishes back off (ack_republishes on TrackedResource, decided by the caller). Errors are
// counted and logged once per outage; the next interval tries again.
//
// Thread safety: loop thread only (the look-up runs on the worker pool and answers on the loop).
// Collaborators are borrowed and outlive it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "libs/common/loop.h"
#include "libs/store/dispatch_store.h"
#include "services/dispatcher/apps/metrics.h"
#include "services/dispatcher/apps/reconciler_settings.h"

namespace mmi::dispatcher {

class AckCheck {
 public:
  struct Deps {
    Loop& loop;
    WorkerPool& workers;
    store::DispatchStore& store;
    DispatcherMetrics& metrics;
    // Loop thread: publish `resource` again if it is still what was listed; true when it will be.
    std::function<bool(const store::UnacknowledgedResource& resource)> republish;
    // Loop thread: the first step of `handover` (handover.h) is acknowledged; the second may
    // go. Null: hand-overs are not looked up.
    std::function<void(const store::AcknowledgedHandover& handover)> handover_acked;
  };
  AckCheck(Deps deps, AckCheckSettings settings);
  ~AckCheck();
  AckCheck(const AckCheck&) = delete;
  AckCheck& operator=(const AckCheck&) = delete;

  // Loop thread. The first look-up runs one interval from now; each answer schedules the next.
  void Start();
  // Loop thread. No look-up starts any more (one running answers into nothing).
  void Stop();

  // Loop thread. Runs one look-up now (tests; Start() schedules them).
  void CheckNow();

 private:
  void Schedule();
  void OnAnswer(const absl::StatusOr<store::AckSnapshot>& found);
  // Whether acknowledgements arrived since the last answer (true for the first: nothing known).
  bool Progressed(const store::AckSnapshot& now) const;
  void OnHandovers(const absl::StatusOr<std::vector<store::AcknowledgedHandover>>& acked);

  Deps deps_;
  const AckCheckSettings settings_;
  bool running_ = false;
  bool in_flight_ = false;
  int64_t failures_ = 0;  // failed look-ups since the last answer; logs once per outage
  // The acknowledgements' progress at the last answer (store::AckSnapshot).
  struct Progress {
    std::optional<std::chrono::system_clock::time_point> frontier;
    int64_t acknowledged = 0;
  };
  std::optional<Progress> last_;
  int stall_budget_;      // what the current stall may still republish
  bool waiting_ = false;  // the last answer left resources alone; logs once per backlog
  // Ends a look-up's answer after Stop() or destruction.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace mmi::dispatcher
