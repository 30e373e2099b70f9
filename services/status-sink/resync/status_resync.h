// The status sink's status resyncs (maestro-protocol.md §6.6): the full one - every resource the
// dispatcher placed, per cluster, with the hash of the last report the sink holds - asked for on
// every (re)subscription and after an unrecoverable loss, at most once per `min_interval`; and
// the one that lists only the lost resources (reports dropped for want of room, LostReports),
// sized to the room the pending set has, so that the answers are admitted instead of
// overflowing again.
//
// Threads: AskAfterLoss() and AskAfterSubscribe() are thread-safe (transport callbacks call
// them); everything else runs on the sink's loop thread. Store reads run on `store_executor`;
// results and publish failures are posted to `loop`. Collaborators are borrowed.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "libs/cloudevents/resync.h"
#include "libs/common/backoff.h"
#include "libs/common/clock.h"
#include "libs/common/executor.h"
#include "libs/store/status_store.h"
#include "libs/transport/publisher.h"
#include "services/status-sink/coalescing/coalescer.h"
#include "services/status-sink/metrics/metrics.h"
#include "services/status-sink/resync/lost_reports.h"

namespace mmi::status_sink {

struct StatusResyncSettings {
  std::string source_id;             // our CloudEvents source id
  std::size_t chunk = 5'000;         // resource hashes per status resync request
  std::size_t max_pending = 50'000;  // CoalescerSettings::max_pending: the room for answers
  std::chrono::milliseconds min_interval{30'000};  // SinkSettings::status_resync_min_interval
  LostReportsSettings lost;
  BackoffSettings retry_backoff;  // delay before retrying a failed store read or publish
};

class StatusResync {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  StatusResync(StatusResyncSettings settings, transport::Publisher& publisher,
               store::StatusStore& store, Executor& store_executor, Executor& loop,
               const Clock& clock, SinkMetrics& metrics, const Coalescer& coalescer);

  // A report was dropped and nothing says which: a full status resync. Counted as one ask per
  // episode, not per dropped report. Thread-safe.
  void AskAfterLoss();
  // The subscription became active (again): events may have been missed. Thread-safe.
  void AskAfterSubscribe();

  // The report of `resource_id` (from `cluster`) was dropped for want of room: remembered, and
  // asked for by a resync of lost reports (by a full resync when it cannot be remembered).
  void RememberLost(const std::string& resource_id, const std::string& cluster);
  // A report of `resource_id` newer than the last accepted one arrived: it answers any ask, and
  // unless it `overflowed` (remembered as lost again) there is nothing left to recover.
  void ReportArrived(const std::string& resource_id, bool overflowed);

  // One timer round: a full resync when wanted (deferred within `min_interval`), else a resync
  // of lost reports when there are some; then the asks that went unanswered too long. Requests
  // only when `may_request` (not draining) and `intake_has_room` (the intake is at most half
  // full); `awaiting_lookup`: reports waiting for their resource lookup (they take room too).
  void Tick(TimePoint now, bool may_request, bool intake_has_room, std::size_t awaiting_lookup);

  std::size_t lost() const { return lost_.lost(); }
  std::size_t asked() const { return lost_.asked(); }

  // Whether LogUnlogged() has something to say; LogUnlogged() writes the summary lines (given-up
  // lost reports, failed lost-report resync requests) and resets the counts.
  bool HasUnlogged() const { return unlogged_.lost_given_up > 0 || unlogged_.failed > 0; }
  void LogUnlogged();

 private:
  // Lost resources whose ask went unanswered past the answer timeout: asked again, or given up
  // on after the allowed asks (counted, and summed up by LogUnlogged).
  void ExpireLostAsks(TimePoint now);
  void Defer(TimePoint now);
  void RequestFull();
  void OnResyncEntries(absl::StatusOr<std::vector<store::ResyncEntry>> entries);
  // Lists as many lost resources as the pending set has room for (free slots, and waiting
  // volatile-only writes an answer may shed). False (nothing sent) while there is no room.
  bool RequestLost(TimePoint now, std::size_t awaiting_lookup);
  // A lost-report resync request was not published: its resources are lost again.
  void OnLostResyncFailed(const std::string& cluster,
                          const cloudevents::ResourceStatusHashList& ids,
                          const absl::Status& status);
  // Builds and publishes the request for `chunk` (any thread may run `done`). Errors building it
  // are returned; nothing is published then.
  absl::Status Publish(const ResyncChunk& chunk, transport::PublishCallback done);
  std::chrono::milliseconds RetryDelay() {
    return BackoffDelay(settings_.retry_backoff, failures_++);
  }

  const StatusResyncSettings settings_;
  transport::Publisher& publisher_;
  store::StatusStore& store_;
  Executor& store_executor_;
  Executor& loop_;
  const Clock& clock_;
  SinkMetrics& metrics_;
  const Coalescer& coalescer_;

  // Shared with transport threads: a full status resync is wanted; asks since the last resync
  // or deferral count.
  std::atomic<bool> wanted_{false};
  std::atomic<uint64_t> asks_{0};
  // Loop-owned.
  bool in_flight_ = false;
  int failures_ = 0;
  TimePoint retry_at_{};
  TimePoint next_at_{};  // min_interval
  bool deferral_logged_ = false;
  // Reports dropped for want of room and not recovered yet, and those a resync asked for.
  LostReports lost_;
  struct Unlogged {
    uint64_t lost_given_up = 0;
    uint64_t failed = 0;  // lost-report resync requests not published
    std::string last_error;
  };
  Unlogged unlogged_;
};

}  // namespace mmi::status_sink
