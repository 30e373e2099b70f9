#include "services/status-sink/fleet_report.h"

#include <utility>

#include "services/status-sink/metrics/sink_log.h"

namespace mmi::status_sink {

FleetReport::FleetReport(std::chrono::milliseconds interval, store::StatusStore& store,
                         Executor& store_executor, Executor& loop, const Clock& clock,
                         SinkMetrics& metrics)
    : interval_(interval),
      store_(store),
      store_executor_(store_executor),
      loop_(loop),
      clock_(clock),
      metrics_(metrics) {}

void FleetReport::Tick(std::chrono::steady_clock::time_point now) {
  if (!in_flight_ && now >= next_at_) {
    Refresh();
  }
}

void FleetReport::Refresh() {
  in_flight_ = true;
  next_at_ = clock_.MonotonicNow() + interval_;
  store_executor_.Post([this] {
    auto counts = store_.AppSetCounts();
    loop_.Post([this, counts = std::move(counts)]() mutable {
      in_flight_ = false;
      if (!counts.ok()) {
        metrics_.StoreError("counts");
        SinkLog().Warn("cannot read the fleet report counts",
                       {{"error", counts.status().ToString()}});
        return;
      }
      metrics_.SetAppSetCounts(*counts);
    });
  });
}

}  // namespace mmi::status_sink
