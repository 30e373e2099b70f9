// The fleet report (mmi_appset_applications, metrics.h): Applications per ApplicationSet, sync
// and health, read from the store (StatusStore::AppSetCounts) every `interval`.
//
// Not thread-safe: owned by the sink's loop thread. The store read runs on `store_executor`, its
// result is posted to `loop`. Collaborators are borrowed.
#pragma once

#include <chrono>

#include "libs/common/clock.h"
#include "libs/common/executor.h"
#include "libs/store/status_store.h"
#include "services/status-sink/metrics/metrics.h"

namespace mmi::status_sink {

class FleetReport {
 public:
  FleetReport(std::chrono::milliseconds interval, store::StatusStore& store,
              Executor& store_executor, Executor& loop, const Clock& clock, SinkMetrics& metrics);

  // Starts a refresh when `interval` passed since the last one began and none is in flight.
  void Tick(std::chrono::steady_clock::time_point now);

 private:
  void Refresh();

  const std::chrono::milliseconds interval_;
  store::StatusStore& store_;
  Executor& store_executor_;
  Executor& loop_;
  const Clock& clock_;
  SinkMetrics& metrics_;
  bool in_flight_ = false;
  std::chrono::steady_clock::time_point next_at_{};
};

}  // namespace mmi::status_sink
