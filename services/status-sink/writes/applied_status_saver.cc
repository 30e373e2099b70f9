#include "services/status-sink/writes/applied_status_saver.h"

#include <utility>

#include "services/status-sink/metrics/sink_log.h"

namespace mmi::status_sink {
AppliedStatusSaver::AppliedStatusSaver(AppliedStatusSaverSettings settings,
                                       store::StatusStore& store, Executor& store_executor,
                                       Executor& loop, const Clock& clock, SinkMetrics& metrics)
    : settings_(settings),
      store_(store),
      store_executor_(store_executor),
      loop_(loop),
      clock_(clock),
      metrics_(metrics) {}

void AppliedStatusSaver::Add(store::AppliedStatus row, std::vector<Ack> acks) {
  if (queue_.empty()) {
    first_at_ = clock_.MonotonicNow();
  }
  queue_.push_back(Row{std::move(row), std::move(acks)});
}

void AppliedStatusSaver::Flush() { Flush(draining_); }

void AppliedStatusSaver::Drain() {
  draining_ = true;
  Flush(/*force=*/true);
}

void AppliedStatusSaver::Flush(bool force) {
  if (in_flight_ || queue_.empty()) {
    return;
  }
  const auto now = clock_.MonotonicNow();
  if (now < retry_at_ && !force) {
    return;
  }
  if (!force && queue_.size() < settings_.batch && now - first_at_ < settings_.interval) {
    return;
  }
  std::vector<Row> batch;
  while (!queue_.empty() && batch.size() < settings_.batch) {
    batch.push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
  first_at_ = now;
  in_flight_ = true;
  store_executor_.Post([this, batch = std::move(batch)]() mutable {
    std::vector<store::AppliedStatus> rows;
    rows.reserve(batch.size());
    for (const auto& r : batch) {
      rows.push_back(r.row);
    }
    absl::Status status = store_.SaveAppliedStatuses(rows);
    if (status.ok()) {
      for (auto& r : batch) {
        for (auto& ack : r.acks) {
          std::move(ack)();  // acks may run on any thread
        }
        r.acks.clear();
      }
    }
    loop_.Post([this, batch = std::move(batch), status = std::move(status)]() mutable {
      OnSaved(std::move(batch), std::move(status));
    });
  });
}

void AppliedStatusSaver::OnSaved(std::vector<Row> batch, absl::Status status) {
  in_flight_ = false;
  if (!status.ok()) {
    metrics_.StoreError("save");
    SinkLog().Warn("cannot save applied statuses; retrying",
                   {{"error", status.ToString()}, {"rows", static_cast<int64_t>(batch.size())}});
    retry_at_ = clock_.MonotonicNow() + BackoffDelay(settings_.retry_backoff, failures_++);
    for (auto it = batch.rbegin(); it != batch.rend(); ++it) {
      queue_.push_front(std::move(*it));
    }
    return;
  }
  failures_ = 0;
  Flush();
}

}  // namespace mmi::status_sink
