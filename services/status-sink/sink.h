// The status sink's loop: takes status events from the transport, maps each resource id to its
// hub Application, coalesces per resource and writes the hub status, persists what was applied,
// hands completed deletions to the dispatcher, requests status resyncs and refreshes the fleet
// report. Decoding is DecodeStatusReport (status_report.h), lost-report bookkeeping LostReports
// (lost_reports.h); the code is in sink.cc (lifecycle, intake, lookups), sink_writes.cc (writes,
// deletion hand-offs, persistence) and sink_resync.cc (status resyncs, fleet report).
//
// Threads: transport callbacks only enqueue (a bounded intake: beyond `intake_capacity` events
// are acknowledged, dropped, counted and recovered by a later status resync). One loop thread
// owns all state (Coalescer, resource-id cache, persist queue). Hub PATCHes run on the Writer's
// pool and database calls on `store_executor`; their results are posted back to the loop.
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
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "libs/common/backoff.h"
#include "libs/common/clock.h"
#include "libs/common/executor.h"
#include "libs/common/log.h"
#include "libs/common/log_summary.h"
#include "libs/common/loop.h"
#include "libs/store/status_store.h"
#include "libs/transport/publisher.h"
#include "libs/transport/subscriber.h"
#include "services/status-sink/coalescer.h"
#include "services/status-sink/lost_reports.h"
#include "services/status-sink/metrics.h"
#include "services/status-sink/rolling_sync.h"
#include "services/status-sink/status_patch.h"
#include "services/status-sink/status_report.h"
#include "services/status-sink/writer.h"

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

  // Thread-safe readiness: resumed and subscribed.
  bool ready() const { return resumed_.load() && subscriber_.connected(); }

  // Tests drive the loop on their own thread: subscribe without a loop thread, then run posted
  // work and timers until nothing is left.
  absl::Status StartWithoutThreadForTest();
  void RunUntilIdleForTest();
  std::size_t pending_for_test() const { return coalescer_.pending(); }

 private:
  // The sink's logger, shared by sink.cc, sink_writes.cc and sink_resync.cc.
  static const log::Logger& Log();

  // A decoded report waiting for its resource lookup or admitted.
  struct Awaiting {
    StatusReport report;
    transport::AckFn ack;
  };
  struct Persist {
    store::AppliedStatus row;
    std::vector<transport::AckFn> acks;
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

  void HandleEvent(cloudevents::Event event, transport::AckFn ack);
  void Admit(const store::HubAppRef& ref, Awaiting item);
  void StartLookup();
  void OnLookupDone(std::vector<std::string> ids,
                    absl::StatusOr<std::vector<store::HubAppRef>> refs);
  void Pump();
  void Dispatch(WriteTask task);
  void OnWriteDone(WriteTask task, WriteOutcome outcome);
  void OnDeletionDone(WriteTask task, absl::StatusOr<bool> confirmed);
  void FlushPersist(bool force);
  void OnPersistDone(std::vector<Persist> batch, absl::Status status);
  // Asks for a status resync because events were dropped (any thread); counted as one ask per
  // episode, not per dropped event.
  // A report was dropped and nothing says which: a full status resync (every resource).
  void ResyncAfterLoss();
  // The report of `resource_id` (from `cluster`) was dropped for want of room: remembered in
  // lost_, and recovered by RequestLostResync (or by a full resync when it cannot be).
  void RememberLost(const std::string& resource_id, const std::string& cluster);
  // Lost resources whose ask went unanswered past lost_answer_timeout: asked again, or given up
  // on after lost_asks asks (counted, and summed up by LogDrops).
  void ExpireLostAsks(std::chrono::steady_clock::time_point now);
  void DeferResync(std::chrono::steady_clock::time_point now);
  void RequestResync();
  // A status resync that lists only lost resources, as many as the pending set has room for
  // (free slots, and waiting volatile-only writes an answer may shed)
  // (agents answer only for listed works, maestro-protocol.md §6.6), so the answers are
  // admitted instead of overflowing again. Returns false (nothing sent) while there is no room.
  bool RequestLostResync(std::chrono::steady_clock::time_point now);
  // A status resync request for lost reports was not published: its resources are lost again.
  void OnLostResyncFailed(const std::string& cluster,
                          const cloudevents::ResourceStatusHashList& ids,
                          const absl::Status& status);
  // Builds and publishes the status resync request for `chunk` (any thread may run `done`).
  // Errors building it are returned; nothing is published then.
  absl::Status PublishResyncRequest(const ResyncChunk& chunk, transport::PublishCallback done);
  void OnResyncEntries(absl::StatusOr<std::vector<store::ResyncEntry>> entries);
  void RefreshCounts();
  void UpdateQueueGauges();
  // Warning lines summing the reports shed and overflowed and the lost-report resync requests
  // that failed to publish since the last ones, at most once per kDropLogInterval (the metrics
  // count each one).
  void LogDrops(std::chrono::steady_clock::time_point now);
  std::chrono::milliseconds RetryDelay(int attempts) const;
  void Release(std::vector<transport::AckFn>& acks);

  const SinkSettings settings_;
  transport::Subscriber& subscriber_;
  transport::Publisher& publisher_;
  store::StatusStore& store_;
  Writer& writer_;
  Executor& store_executor_;
  const Clock& clock_;
  SinkMetrics& metrics_;
  const RollingSyncLookup* const rolling_sync_;
  // Per-event warnings about bad or unmatched input, summed up (log_summary.h): an agent that
  // misbehaves cannot flood the log. The metrics count every event.
  struct Warnings {
    Warnings(const log::Logger& logger, const Clock& clock)
        : malformed(logger, "dropping malformed status events", clock),
          wrong_cluster(logger, "status events from a cluster the resource was not dispatched to",
                        clock),
          other_application(logger,
                            "status events whose ManifestWork metadata names another hub "
                            "application; using the dispatcher's record",
                            clock),
          unknown_resource(
              logger, "status events for resources the dispatcher does not know; dropped", clock),
          bad_patch(logger, "cannot build the hub status patch; dropped", clock),
          app_not_found(logger, "hub application not found; status dropped", clock),
          patch_refused(logger, "hub refused the status patch; dropped", clock),
          deleted_while_live(
              logger, "Deleted reports for resources that are not being deleted; ignored", clock) {}
    void Flush() {
      for (log::WarnSummary* w :
           {&malformed, &wrong_cluster, &other_application, &unknown_resource, &bad_patch,
            &app_not_found, &patch_refused, &deleted_while_live}) {
        w->Flush();
      }
    }
    log::WarnSummary malformed;
    log::WarnSummary wrong_cluster;
    log::WarnSummary other_application;
    log::WarnSummary unknown_resource;
    log::WarnSummary bad_patch;
    log::WarnSummary app_not_found;
    log::WarnSummary patch_refused;
    log::WarnSummary deleted_while_live;
  };
  Warnings warnings_;

  // Shared with transport threads.
  std::atomic<bool> resumed_{false};
  struct Intake {
    std::atomic<bool> closed{false};
    std::atomic<std::size_t> depth{0};  // events posted to the loop, not yet handled
  };
  Intake intake_;
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
  // The loop thread, which alone touches the state below. AfterStop::kDrop: nothing posted
  // after Stop() runs.
  Loop loop_;

  // Loop-owned state.
  Coalescer coalescer_;
  // Resource id -> hub Application (the dispatcher's table, cached), and the reports waiting
  // for a batched lookup of their resource id.
  struct Lookup {
    std::unordered_map<std::string, store::HubAppRef> refs;
    std::map<std::string, std::vector<Awaiting>> awaiting;
    std::size_t awaiting_count = 0;
    bool in_flight = false;
    int failures = 0;
    std::chrono::steady_clock::time_point retry_at{};
  };
  Lookup lookup_;
  // Applied statuses to save (their acks wait for the save).
  struct PersistQueue {
    std::deque<Persist> queue;
    std::chrono::steady_clock::time_point first_at{};
    bool in_flight = false;
    int failures = 0;
    std::chrono::steady_clock::time_point retry_at{};
  };
  PersistQueue persist_;
  struct Counts {  // the fleet report refresh
    bool in_flight = false;
    std::chrono::steady_clock::time_point next_at{};
  };
  Counts counts_;
  struct Resync {
    // Shared with transport threads: a full status resync is wanted; asks since the last
    // resync or deferral count.
    std::atomic<bool> wanted{false};
    std::atomic<uint64_t> asks{0};
    // Loop-owned.
    bool in_flight = false;
    int failures = 0;
    std::chrono::steady_clock::time_point retry_at{};
    std::chrono::steady_clock::time_point next_at{};  // status_resync_min_interval
    bool deferral_logged = false;
  };
  Resync resync_;
  // Reports dropped for want of room and not recovered yet, and those a resync asked for.
  LostReports lost_;
  // Counts since the last summary lines (LogDrops): one warning per kDropLogInterval instead of
  // one per report, which at fleet scale would be thousands a second.
  struct Unlogged {
    uint64_t shed = 0;
    uint64_t overflowed = 0;
    uint64_t lost_given_up = 0;
    uint64_t lost_resync_failed = 0;  // lost-report resync requests not published
    std::string lost_resync_last_error;
    std::chrono::steady_clock::time_point next_log_at{};
  };
  Unlogged unlogged_;
  std::chrono::steady_clock::time_point last_tick_{};
};

}  // namespace mmi::status_sink
