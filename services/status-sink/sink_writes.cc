// The sink's hub writes, deletion hand-offs and persistence of applied statuses (sink.h).
#include <utility>

#include "services/status-sink/sink.h"

namespace mmi::status_sink {
// --- writes ---------------------------------------------------------------------------------

void Sink::Pump() {
  const std::size_t in_flight = coalescer_.in_flight();
  if (in_flight >= settings_.max_in_flight) {
    return;
  }
  auto ready = coalescer_.TakeReady(settings_.max_in_flight - in_flight);
  Release(ready.release);
  for (int i = 0; i < ready.unchanged; ++i) {
    metrics_.Dropped(DropReason::kUnchanged);
  }
  for (auto& task : ready.tasks) {
    Dispatch(std::move(task));
  }
}

void Sink::Dispatch(WriteTask task) {
  auto ref = lookup_.refs.find(task.update.resource_id);
  if (ref == lookup_.refs.end()) {
    coalescer_.Dropped(task);
    Release(task.acks);
    return;
  }
  if (task.kind == TaskKind::kConfirmDeletion) {
    store_executor_.Post([this, task = std::move(task)]() mutable {
      absl::StatusOr<bool> confirmed = store_.MarkDeletionConfirmed(task.update.resource_id);
      Post([this, task = std::move(task), confirmed = std::move(confirmed)]() mutable {
        OnDeletionDone(std::move(task), std::move(confirmed));
      });
    });
    return;
  }
  auto patch = BuildStatusPatch(StatusTree(task.update), settings_.patch, clock_.Now());
  if (!patch.ok()) {
    metrics_.Write(WriteResult::kInvalid, {});
    warnings_.bad_patch.Add(
        task.update.resource_id,
        {{"resource", task.update.resource_id},
         {"application", ref->second.hub_namespace + "/" + ref->second.hub_name},
         {"error", patch.status().ToString()}});
    coalescer_.Dropped(task);
    Release(task.acks);
    return;
  }
  // Decided here, with no write of this resource in flight, so the last written health is
  // what the hub shows. A volatile-only write changes no health: no transition to show.
  const bool progressing_first =
      !task.volatile_only &&
      NeedsProgressingFirst(task.update.status,
                            coalescer_.WrittenHealth(task.update.resource_id)) &&
      WantsProgressingFirst(settings_.progressing_before_healthy, rolling_sync_,
                            ref->second.appset_namespace, ref->second.appset_name);
  WriteDone done = [this, task = std::move(task)](WriteOutcome outcome) mutable {
    Post([this, task = std::move(task), outcome = std::move(outcome)]() mutable {
      OnWriteDone(std::move(task), std::move(outcome));
    });
  };
  if (progressing_first) {
    writer_.WriteProgressingFirst(ref->second.hub_namespace, ref->second.hub_name,
                                  *std::move(patch), std::move(done));
  } else {
    writer_.Write(ref->second.hub_namespace, ref->second.hub_name, *std::move(patch),
                  std::move(done));
  }
}

void Sink::OnWriteDone(WriteTask task, WriteOutcome outcome) {
  const auto ref = lookup_.refs.find(task.update.resource_id);
  const std::string app =
      ref == lookup_.refs.end() ? "" : ref->second.hub_namespace + "/" + ref->second.hub_name;
  if (outcome.progressing_written && outcome.result != WriteResult::kOk) {
    // The hub shows Progressing now: a retry of the Healthy write needs no second one.
    coalescer_.HealthWritten(task.update.resource_id, kHealthProgressing);
  }
  switch (outcome.result) {
    case WriteResult::kOk: {
      store::AppliedStatus row = coalescer_.Written(task);
      if (ref != lookup_.refs.end()) {
        row.appset_namespace = ref->second.appset_namespace;
        row.appset_name = ref->second.appset_name;
      }
      if (task.update.event_time) {
        metrics_.Lag(clock_.Now() - *task.update.event_time, task.volatile_only);
      }
      Log().Debug("hub status written", {{"resource", task.update.resource_id},
                                         {"application", app},
                                         {"volatile_only", task.volatile_only}});
      if (persist_.queue.empty()) {
        persist_.first_at = clock_.MonotonicNow();
      }
      persist_.queue.push_back(Persist{std::move(row), std::move(task.acks)});
      break;
    }
    case WriteResult::kNotFound:
      warnings_.app_not_found.Add(task.update.resource_id,
                                  {{"resource", task.update.resource_id}, {"application", app}});
      coalescer_.Dropped(task);
      Release(task.acks);
      break;
    case WriteResult::kInvalid:
      warnings_.patch_refused.Add(task.update.resource_id, {{"resource", task.update.resource_id},
                                                            {"application", app},
                                                            {"error", outcome.status.ToString()}});
      coalescer_.Dropped(task);
      Release(task.acks);
      break;
    case WriteResult::kRetry: {
      const auto delay = RetryDelay(task.attempts);
      Log().Debug("hub status write failed; retrying",
                  {{"resource", task.update.resource_id},
                   {"error", outcome.status.ToString()},
                   {"delay_ms", static_cast<int64_t>(delay.count())}});
      coalescer_.Requeue(std::move(task), delay);
      break;
    }
  }
  FlushPersist(life_.draining);
  Pump();
}

void Sink::OnDeletionDone(WriteTask task, absl::StatusOr<bool> confirmed) {
  if (!confirmed.ok()) {
    metrics_.StoreError("deletion");
    const auto delay = RetryDelay(task.attempts);
    Log().Warn("cannot record a confirmed deletion; retrying",
               {{"resource", task.update.resource_id}, {"error", confirmed.status().ToString()}});
    coalescer_.Requeue(std::move(task), delay);
    return;
  }
  if (!*confirmed) {
    // A late or redelivered Deleted report for a resource that is live again (re-created) or
    // was never asked to go: the store changed nothing, and the resource keeps its state here.
    metrics_.Dropped(DropReason::kDeletedWhileLive);
    const auto ref = lookup_.refs.find(task.update.resource_id);
    warnings_.deleted_while_live.Add(
        task.update.resource_id,
        {{"resource", task.update.resource_id},
         {"application", ref == lookup_.refs.end()
                             ? std::string()
                             : ref->second.hub_namespace + "/" + ref->second.hub_name}});
    coalescer_.Dropped(task);
    Release(task.acks);
    Pump();
    return;
  }
  metrics_.DeletionConfirmed();
  Log().Info("deletion confirmed by the agent; handed to the dispatcher",
             {{"resource", task.update.resource_id}});
  auto later = coalescer_.Forget(task.update.resource_id);
  lookup_.refs.erase(task.update.resource_id);
  Release(task.acks);
  Release(later);
  Pump();
}

// --- persistence ----------------------------------------------------------------------------

void Sink::FlushPersist(bool force) {
  if (persist_.in_flight || persist_.queue.empty()) {
    return;
  }
  const auto now = clock_.MonotonicNow();
  if (now < persist_.retry_at && !force) {
    return;
  }
  if (!force && persist_.queue.size() < settings_.persist_batch &&
      now - persist_.first_at < settings_.persist_interval) {
    return;
  }
  std::vector<Persist> batch;
  while (!persist_.queue.empty() && batch.size() < settings_.persist_batch) {
    batch.push_back(std::move(persist_.queue.front()));
    persist_.queue.pop_front();
  }
  persist_.first_at = now;
  persist_.in_flight = true;
  store_executor_.Post([this, batch = std::move(batch)]() mutable {
    std::vector<store::AppliedStatus> rows;
    rows.reserve(batch.size());
    for (const auto& p : batch) {
      rows.push_back(p.row);
    }
    absl::Status status = store_.SaveAppliedStatuses(rows);
    if (status.ok()) {
      for (auto& p : batch) {
        for (auto& ack : p.acks) {
          std::move(ack)();  // acks may run on any thread
        }
        p.acks.clear();
      }
    }
    Post([this, batch = std::move(batch), status = std::move(status)]() mutable {
      OnPersistDone(std::move(batch), std::move(status));
    });
  });
}

void Sink::OnPersistDone(std::vector<Persist> batch, absl::Status status) {
  persist_.in_flight = false;
  if (!status.ok()) {
    metrics_.StoreError("save");
    Log().Warn("cannot save applied statuses; retrying",
               {{"error", status.ToString()}, {"rows", static_cast<int64_t>(batch.size())}});
    persist_.retry_at = clock_.MonotonicNow() + RetryDelay(persist_.failures++);
    for (auto it = batch.rbegin(); it != batch.rend(); ++it) {
      persist_.queue.push_front(std::move(*it));
    }
    return;
  }
  persist_.failures = 0;
  FlushPersist(life_.draining);
}

}  // namespace mmi::status_sink
