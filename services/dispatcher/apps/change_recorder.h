// ChangeRecorder: the reconciler's outbox side. It records a batch of decided changes in the
// store (one Record() transaction on the worker pool), hands the recorded events to the Outbox,
// and follows them there: when the broker accepts one it updates the tracked resource, starts
// the resend clock of a delete request and strips the propagated request from the hub
// (RequestStripper). A batch the store refuses is undone and its keys are decided again after
// a backoff.
//
// Thread safety: loop thread only, except inflight() (any thread). Collaborators are borrowed
// and outlive it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "libs/common/backoff.h"
#include "libs/common/clock.h"
#include "libs/common/loop.h"
#include "libs/store/dispatch_store.h"
#include "services/dispatcher/apps/dispatch_state.h"
#include "services/dispatcher/apps/outbox.h"
#include "services/dispatcher/apps/pending_change.h"
#include "services/dispatcher/apps/reconciler_settings.h"
#include "services/dispatcher/apps/request_stripper.h"

namespace mmi::dispatcher {

class ChangeRecorder {
 public:
  struct Deps {
    Loop& loop;
    WorkerPool& workers;
    store::DispatchStore& store;
    Outbox& outbox;
    DispatchState& state;
    RequestStripper& stripper;
    const Clock& clock;
    Backoff& retry;  // shared with the reconciler's other retries
    // A key whose resource changed again while its change was recorded: decide it again.
    std::function<void(const std::string& key)> requeue;
    // Queues the key again after `delay`.
    std::function<void(const std::string& key, std::chrono::milliseconds delay)> retry_after;
    // A batch slot is free again: `recorded` after a success, `failed` after a refusal.
    std::function<void(bool failed)> slot_freed;
    // The broker accepted a resend of an unconfirmed delete request (DeletionCheck::Submit
    // over gRPC); empty = nothing to do.
    std::function<void(const std::string& resource_id)> delete_resent;
  };
  // Registers itself as the outbox's published hook.
  ChangeRecorder(Deps deps, const ReconcilerSettings& settings);

  // Records `batch` (one transaction); its events go to the outbox once recorded.
  void Flush(std::vector<PendingChange> batch);
  // Any thread. Record() transactions running.
  int inflight() const { return inflight_.load(); }

 private:
  void OnRecorded(std::vector<PendingChange> batch, absl::StatusOr<std::vector<int64_t>> seqs);
  // The store refused `batch`: undo what was decided for it and decide its keys again later.
  void OnRecordFailed(const std::vector<PendingChange>& batch, const absl::Status& error);
  // The broker accepted `entry`.
  void OnPublished(const store::OutboxEntry& entry);

  Deps deps_;
  const ReconcilerSettings& settings_;
  std::atomic<int> inflight_{0};
};

}  // namespace mmi::dispatcher
