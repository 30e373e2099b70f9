// The status sink: takes status events from the transport and writes each Application's status
// onto its hub Application. Sink is the owner that wires the collaborators and runs their loop:
//
//   intake/    Intake (decode, cluster check, offer to the Coalescer) and HubApps (resource id ->
//              hub Application, batched store lookups)
//   coalescing/ Coalescer (per-resource latest-wins, order, dedupe, material change)
//   writes/    HubWrites (status patches through the Writer, deletion hand-offs) and
//              AppliedStatusSaver (applied statuses saved in batches, then acknowledged)
//   resync/    StatusResync (full and lost-report status resyncs, LostReports)
//   FleetReport (the mmi_appset_applications report)
//
// Threads: transport callbacks only enqueue (a bounded intake: beyond `intake_capacity` events
// are acknowledged, dropped, counted and recovered by a later status resync). One loop thread
// owns all state (the collaborators above). Hub PATCHes run on the Writer's pool and database
// calls on `store_executor`; their results are posted back to the loop.
//
// Acknowledgement: an event is acknowledged once its effect is durable (hub written and the
// applied status saved, or the deletion recorded) or once it was deliberately dropped.
//
// Lifecycle: Resume() (blocking, before Start), Start(), Stop(drain) (idempotent). Collaborators
// are borrowed and must outlive the sink; stop the store and writer pools only after Stop().
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "libs/common/backoff.h"
#include "libs/common/clock.h"
#include "libs/common/executor.h"
#include "libs/common/loop.h"
#include "libs/store/status_store.h"
#include "libs/transport/publisher.h"
#include "libs/transport/subscriber.h"
#include "services/status-sink/coalescing/coalescer.h"
#include "services/status-sink/fleet_report.h"
#include "services/status-sink/intake/hub_apps.h"
#include "services/status-sink/intake/intake.h"
#include "services/status-sink/intake/manifest_payloads.h"
#include "services/status-sink/intake/manifest_statuses.h"
#include "services/status-sink/metrics/metrics.h"
#include "services/status-sink/resync/status_resync.h"
#include "services/status-sink/writes/applied_status_saver.h"
#include "services/status-sink/writes/hub_writes.h"
#include "services/status-sink/writes/rolling_sync.h"
#include "services/status-sink/writes/status_patch.h"
#include "services/status-sink/writes/writer.h"

namespace mmi::status_sink {

struct SinkSettings {
  std::string source_id;                     // our CloudEvents source id (status resync requests)
  std::size_t intake_capacity = 10'000;      // events taken from the transport, not yet processed
  std::size_t max_in_flight = 64;            // concurrent hub writes and deletion hand-offs
  std::size_t lookup_batch = 500;            // resource ids per store lookup
  std::size_t max_awaiting_lookup = 20'000;  // events waiting for their resource lookup
  std::size_t persist_batch = 500;           // applied statuses per store write
  std::chrono::milliseconds persist_interval{200};    // longest wait before a partial batch
  std::chrono::milliseconds counts_interval{30'000};  // fleet report refresh
  std::size_t resync_chunk = 5'000;                   // resource hashes per status resync request
  // Resources remembered as lost (report dropped for want of room) at most; beyond, a loss asks
  // for a full status resync instead.
  std::size_t max_lost = 1'000'000;
  // A lost resource listed in a status resync whose report has not come back after this long is
  // asked for again (the request or the answer may be lost on the way, or shed by a saturated
  // broker); after `lost_asks` asks it is given up on (the agent's report may equal the one the
  // sink holds: then it has nothing to answer), logged and counted
  // (mmi_status_lost_unanswered_total). Any report of the resource ends the wait.
  std::chrono::milliseconds lost_answer_timeout{300'000};
  int lost_asks = 3;
  std::chrono::milliseconds tick{50};  // loop wake-up for timers
  // (status.maxManifestPayloads) Manifest delivery: distinct rendered bundles whose manifests
  // are held (ManifestPayloads); a render is shared by every cluster it goes to, so this bounds
  // renders, not resources. Beyond it the least recently used is evicted and read again from the
  // store when a report needs it.
  std::size_t max_manifest_payloads = 1'024;
  // (status.maxManifestStatuses) Manifest delivery: resources whose last agent report is held,
  // so that a render change (new revision, render error) is written without asking the agent
  // (ManifestStatuses). Beyond it the least recently reported is evicted; its render changes
  // ask the agent through the lost-report status resync. 0 = none held.
  std::size_t max_manifest_statuses = ManifestStatuses::kDefaultMaxHeld;
  // (status.progressingBeforeHealthy) Before writing a Healthy status onto a hub Application
  // whose last written health was neither Healthy nor Progressing (first write, Missing,
  // Degraded, ...), write the same status with health Progressing, so that the ApplicationSet
  // controller's RollingSync observes the transition (hub-apis.md §1.7, §5.6): for Applications
  // of a RollingSync ApplicationSet (kRollingSync, rolling_sync.h), for all (kAlways, as
  // upstream) or never. One extra write per such transition
  // (mmi_status_progressing_writes_total).
  ProgressingMode progressing_before_healthy = ProgressingMode::kRollingSync;
  // (status.statusResyncMinInterval) Least time between two status resyncs (one resync = the
  // requests to every cluster). What asks for one in between - (re)subscriptions of a flapping
  // broker connection, dropped events - is counted (mmi_status_resync_suppressed_total) and served
  // by a single resync once the interval has passed. 0 = no limit.
  std::chrono::milliseconds status_resync_min_interval{30'000};
  // Delay before retrying a failed hub write or store call (grows per attempt, no jitter).
  BackoffSettings retry_backoff{std::chrono::milliseconds(500), std::chrono::milliseconds(60'000),
                                2.0, 0.0};
  CoalescerSettings coalescer;
  StatusPatchSettings patch;
};

class Sink {
 public:
  // `rolling_sync` (nullable, borrowed) tells which ApplicationSets use RollingSync; without it
  // ProgressingMode::kRollingSync treats every ApplicationSet as one that does.
  Sink(SinkSettings settings, transport::Subscriber& subscriber, transport::Publisher& publisher,
       store::StatusStore& store, Writer& writer, Executor& store_executor, const Clock& clock,
       SinkMetrics& metrics, const RollingSyncLookup* rolling_sync = nullptr);
  ~Sink();
  Sink(const Sink&) = delete;
  Sink& operator=(const Sink&) = delete;

  // Loads the last applied status of every resource from the store. Blocking; call before
  // Start() on the app thread. Store errors are returned (retryable ones: call again).
  absl::Status Resume();
  // Starts the loop thread and subscribes; every (re)subscription requests a status resync.
  absl::Status Start();
  // Stops intake (later events stay unacknowledged), lets pending writes finish and their acks
  // reach the transport for up to `drain`, then stops the loop and the subscriber. Idempotent.
  void Stop(std::chrono::milliseconds drain);

  // Thread-safe: the dispatcher changed the manifest render of `resource_id` (revision, source
  // type or render error; LISTEN mmi_manifest_render). The sink reads its record again and maps
  // the resource's last agent report against it (Intake::RenderChanged), so the change reaches
  // the hub without an agent event; with no report held it asks the agent (status resync).
  void ManifestRenderChanged(std::string resource_id);

  // Thread-safe readiness: resumed and subscribed.
  bool ready() const { return resumed_.load() && subscriber_.connected(); }

  // Tests drive the loop on their own thread: subscribe without a loop thread, then run posted
  // work and timers until nothing is left.
  absl::Status StartWithoutThreadForTest();
  void RunUntilIdleForTest();
  std::size_t pending_for_test() const { return coalescer_.pending(); }

 private:
  // What the collaborators post their results to: the sink's loop, through Post().
  class LoopExecutor final : public Executor {
   public:
    explicit LoopExecutor(Sink& sink) : sink_(sink) {}
    void Post(Task task) override { sink_.Post(std::move(task)); }

   private:
    Sink& sink_;
  };

  absl::Status Subscribe();
  // Runs `task` on the loop (any thread).
  void Post(Task task);
  // Tick() every settings.tick on the loop thread.
  void ScheduleTick();
  // After each task on the loop: tells Stop() once its drain left nothing pending.
  void NoteDrained();
  void Tick();
  bool Idle() const;
  void UpdateQueueGauges();
  // Warning lines summing the reports shed and overflowed and the lost-report resync requests
  // that failed or went unanswered since the last ones, at most once per kDropLogInterval (the
  // metrics count each one).
  void LogDrops(std::chrono::steady_clock::time_point now);
  // A resource read again after ManifestRenderChanged(): Intake::RenderChanged.
  void OnManifestRefreshed(const store::HubAppRef& ref);

  const SinkSettings settings_;
  transport::Subscriber& subscriber_;
  store::StatusStore& store_;
  const Clock& clock_;
  SinkMetrics& metrics_;

  // Shared with transport threads.
  std::atomic<bool> resumed_{false};
  struct IntakeGate {
    std::atomic<bool> closed{false};
    std::atomic<std::size_t> depth{0};  // events posted to the loop, not yet handled
  };
  IntakeGate gate_;
  struct Lifecycle {
    std::atomic<bool> started{false};
    std::atomic<bool> threaded{false};  // Start(), not StartWithoutThreadForTest()
    std::atomic<bool> stopped{false};
    // Stop()'s drain period is over: tasks still queued are dropped unrun (their events stay
    // unacknowledged and come back by redelivery or a status resync).
    std::atomic<bool> abandoned{false};
    absl::Mutex drain_mu;
    bool drained ABSL_GUARDED_BY(drain_mu) = false;
    bool draining = false;  // loop-owned: Stop() began its drain
  };
  Lifecycle life_;
  // The loop thread, which alone touches the collaborators below. AfterStop::kDrop: nothing
  // posted after Stop() runs.
  Loop loop_;
  LoopExecutor on_loop_{*this};

  // Loop-owned, in dependency order (each borrows those above it).
  Coalescer coalescer_;
  StatusResync resync_;
  ManifestPayloads manifest_payloads_;  // thread-safe: loaded on the store executor
  ManifestStatuses manifest_statuses_;
  HubApps hub_apps_;
  Intake intake_;
  AppliedStatusSaver saver_;
  HubWrites hub_writes_;
  FleetReport fleet_report_;
  std::chrono::steady_clock::time_point next_drop_log_at_{};
  std::chrono::steady_clock::time_point last_tick_{};
};

}  // namespace mmi::status_sink
