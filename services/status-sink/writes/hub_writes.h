// The status sink's hub writes, on its loop: takes the writes the Coalescer has ready (at most
// `max_in_flight` at a time), builds each hub status patch (status_patch.h), decides on a
// Progressing write before a Healthy one (rolling_sync.h), hands the PATCH to the Writer and,
// once it landed, the applied status to the AppliedStatusSaver (which acknowledges after the
// save). A report that only brought a newer acknowledged dispatch version goes to the saver with
// no PATCH (TaskKind::kSaveAcknowledgement). A Deleted report is handed to the dispatcher instead
// (StatusStore::MarkDeletionConfirmed).
// Failed writes go back to the coalescer with backoff; the hopeless ones are counted, summed up
// in the log and acknowledged.
//
// Not thread-safe: owned by the sink's loop thread. Hub PATCHes run on the Writer's pool, store
// calls on `store_executor`; their results are posted to `loop`. Collaborators are borrowed.
#pragma once

#include <cstddef>

#include "absl/status/statusor.h"
#include "libs/common/backoff.h"
#include "libs/common/clock.h"
#include "libs/common/executor.h"
#include "libs/common/log_summary.h"
#include "libs/store/status_store.h"
#include "services/status-sink/coalescing/coalescer.h"
#include "services/status-sink/intake/hub_apps.h"
#include "services/status-sink/metrics/metrics.h"
#include "services/status-sink/writes/applied_status_saver.h"
#include "services/status-sink/writes/rolling_sync.h"
#include "services/status-sink/writes/status_patch.h"
#include "services/status-sink/writes/writer.h"

namespace mmi::status_sink {

struct HubWritesSettings {
  std::size_t max_in_flight = 64;  // concurrent hub writes and deletion hand-offs
  ProgressingMode progressing_before_healthy = ProgressingMode::kRollingSync;
  StatusPatchSettings patch;
  BackoffSettings retry_backoff;  // delay before retrying a failed write or store call
};

class HubWrites {
 public:
  // `rolling_sync` (nullable): see SinkSettings::progressing_before_healthy.
  HubWrites(HubWritesSettings settings, Coalescer& coalescer, HubApps& hub_apps, Writer& writer,
            AppliedStatusSaver& saver, store::StatusStore& store, Executor& store_executor,
            Executor& loop, const Clock& clock, SinkMetrics& metrics,
            const RollingSyncLookup* rolling_sync);

  // Starts the writes that are ready, up to `max_in_flight`.
  void Pump();
  // Logs the summed-up warnings that are due.
  void FlushWarnings();

 private:
  void Dispatch(WriteTask task);
  void ConfirmDeletion(WriteTask task);
  void OnWriteDone(WriteTask task, WriteOutcome outcome);
  void OnDeletionDone(WriteTask task, absl::StatusOr<bool> confirmed);
  // The task's status is on the hub: its row goes to the saver, which calls its acks once saved.
  void Save(WriteTask task, const store::HubAppRef* ref);
  // The task is abandoned: the coalescer forgets its flight, its acks are called.
  void Drop(WriteTask& task);
  // "<namespace>/<name>" of the resource's hub Application; "" when not known.
  std::string AppOf(const std::string& resource_id) const;

  const HubWritesSettings settings_;
  Coalescer& coalescer_;
  HubApps& hub_apps_;
  Writer& writer_;
  AppliedStatusSaver& saver_;
  store::StatusStore& store_;
  Executor& store_executor_;
  Executor& loop_;
  const Clock& clock_;
  SinkMetrics& metrics_;
  const RollingSyncLookup* const rolling_sync_;
  log::WarnSummary bad_patch_;
  log::WarnSummary app_not_found_;
  log::WarnSummary patch_refused_;
  log::WarnSummary deleted_while_live_;
};

}  // namespace mmi::status_sink
