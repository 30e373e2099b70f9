// Saves the applied statuses of landed hub writes (StatusStore::SaveAppliedStatuses), in batches
// of up to `batch` rows or after `interval`, and only then calls their acks: an event is
// acknowledged once its effect is durable. A failed save is retried with backoff, rows kept in
// order. Once Drain() was called, every Flush() saves what is queued at once (shutdown).
//
// Not thread-safe: owned by the sink's loop thread. Saves run on `store_executor` (the acks too:
// they may run on any thread); results are posted to `loop`. Collaborators are borrowed.
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <vector>

#include "absl/status/status.h"
#include "libs/common/backoff.h"
#include "libs/common/clock.h"
#include "libs/common/executor.h"
#include "libs/store/status_store.h"
#include "services/status-sink/coalescing/coalescer.h"
#include "services/status-sink/metrics/metrics.h"

namespace mmi::status_sink {

struct AppliedStatusSaverSettings {
  std::size_t batch = 500;                  // applied statuses per store write
  std::chrono::milliseconds interval{200};  // longest wait before a partial batch
  BackoffSettings retry_backoff;            // delay before retrying a failed save
};

class AppliedStatusSaver {
 public:
  AppliedStatusSaver(AppliedStatusSaverSettings settings, store::StatusStore& store,
                     Executor& store_executor, Executor& loop, const Clock& clock,
                     SinkMetrics& metrics);

  // Queues `row`; `acks` are called once it is saved.
  void Add(store::AppliedStatus row, std::vector<Ack> acks);
  // Starts a save when a batch is full or the oldest row waited `interval` (at once after
  // Drain()), unless one is in flight or a failed one waits for its retry.
  void Flush();
  // Shutdown: from now on every Flush() saves what is queued; starts one now.
  void Drain();

  // Nothing queued and no save in flight.
  bool Idle() const { return queue_.empty() && !in_flight_; }
  std::size_t queued() const { return queue_.size(); }

 private:
  struct Row {
    store::AppliedStatus row;
    std::vector<Ack> acks;
  };

  void Flush(bool force);
  void OnSaved(std::vector<Row> batch, absl::Status status);

  const AppliedStatusSaverSettings settings_;
  store::StatusStore& store_;
  Executor& store_executor_;
  Executor& loop_;
  const Clock& clock_;
  SinkMetrics& metrics_;

  std::deque<Row> queue_;
  std::chrono::steady_clock::time_point first_at_{};
  bool in_flight_ = false;
  bool draining_ = false;
  int failures_ = 0;
  std::chrono::steady_clock::time_point retry_at_{};
};

}  // namespace mmi::status_sink
