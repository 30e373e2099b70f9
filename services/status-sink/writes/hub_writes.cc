#include "services/status-sink/writes/hub_writes.h"

#include <string>
#include <utility>

#include "services/status-sink/metrics/sink_log.h"

namespace mmi::status_sink {
namespace {

void Release(std::vector<Ack>& acks) {
  for (auto& ack : acks) {
    std::move(ack)();
  }
  acks.clear();
}

}  // namespace

HubWrites::HubWrites(HubWritesSettings settings, Coalescer& coalescer, HubApps& hub_apps,
                     Writer& writer, AppliedStatusSaver& saver, store::StatusStore& store,
                     Executor& store_executor, Executor& loop, const Clock& clock,
                     SinkMetrics& metrics, const RollingSyncLookup* rolling_sync)
    : settings_(std::move(settings)),
      coalescer_(coalescer),
      hub_apps_(hub_apps),
      writer_(writer),
      saver_(saver),
      store_(store),
      store_executor_(store_executor),
      loop_(loop),
      clock_(clock),
      metrics_(metrics),
      rolling_sync_(rolling_sync),
      bad_patch_(SinkLog(), "cannot build the hub status patch; dropped", clock),
      app_not_found_(SinkLog(), "hub application not found; status dropped", clock),
      patch_refused_(SinkLog(), "hub refused the status patch; dropped", clock),
      deleted_while_live_(
          SinkLog(), "Deleted reports for resources that are not being deleted; ignored", clock) {}

void HubWrites::FlushWarnings() {
  bad_patch_.Flush();
  app_not_found_.Flush();
  patch_refused_.Flush();
  deleted_while_live_.Flush();
}

void HubWrites::Pump() {
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

void HubWrites::Drop(WriteTask& task) {
  coalescer_.Dropped(task);
  Release(task.acks);
}

std::string HubWrites::AppOf(const std::string& resource_id) const {
  const store::HubAppRef* ref = hub_apps_.Find(resource_id);
  return ref == nullptr ? std::string() : ref->hub_namespace + "/" + ref->hub_name;
}

void HubWrites::Dispatch(WriteTask task) {
  const store::HubAppRef* ref = hub_apps_.Find(task.update.resource_id);
  if (ref == nullptr) {
    Drop(task);
    return;
  }
  if (task.kind == TaskKind::kConfirmDeletion) {
    ConfirmDeletion(std::move(task));
    return;
  }
  if (task.kind == TaskKind::kSaveAcknowledgement) {
    // The hub shows this status already: only the acknowledged version is saved.
    SinkLog().Debug("acknowledged dispatch version saved",
                    {{"resource", task.update.resource_id},
                     {"application", ref->hub_namespace + "/" + ref->hub_name},
                     {"acked_version", task.update.acked_version.value_or(0)}});
    Save(std::move(task), ref);
    saver_.Flush();
    return;
  }
  auto patch = BuildStatusPatch(StatusTree(task.update), settings_.patch, clock_.Now());
  if (!patch.ok()) {
    metrics_.Write(WriteResult::kInvalid, {});
    bad_patch_.Add(task.update.resource_id,
                   {{"resource", task.update.resource_id},
                    {"application", ref->hub_namespace + "/" + ref->hub_name},
                    {"error", patch.status().ToString()}});
    Drop(task);
    return;
  }
  // Decided here, with no write of this resource in flight, so the last written health is
  // what the hub shows. A volatile-only write changes no health: no transition to show.
  const bool progressing_first =
      !task.volatile_only &&
      NeedsProgressingFirst(task.update.status,
                            coalescer_.WrittenHealth(task.update.resource_id)) &&
      WantsProgressingFirst(settings_.progressing_before_healthy, rolling_sync_,
                            ref->appset_namespace, ref->appset_name);
  WriteDone done = [this, task = std::move(task)](WriteOutcome outcome) mutable {
    loop_.Post([this, task = std::move(task), outcome = std::move(outcome)]() mutable {
      OnWriteDone(std::move(task), std::move(outcome));
    });
  };
  if (progressing_first) {
    writer_.WriteProgressingFirst(ref->hub_namespace, ref->hub_name, *std::move(patch),
                                  std::move(done));
  } else {
    writer_.Write(ref->hub_namespace, ref->hub_name, *std::move(patch), std::move(done));
  }
}

void HubWrites::ConfirmDeletion(WriteTask task) {
  store_executor_.Post([this, task = std::move(task)]() mutable {
    absl::StatusOr<bool> confirmed = store_.MarkDeletionConfirmed(task.update.resource_id);
    loop_.Post([this, task = std::move(task), confirmed = std::move(confirmed)]() mutable {
      OnDeletionDone(std::move(task), std::move(confirmed));
    });
  });
}

void HubWrites::OnWriteDone(WriteTask task, WriteOutcome outcome) {
  const store::HubAppRef* ref = hub_apps_.Find(task.update.resource_id);
  const std::string app = AppOf(task.update.resource_id);
  if (outcome.progressing_written && outcome.result != WriteResult::kOk) {
    // The hub shows Progressing now: a retry of the Healthy write needs no second one.
    coalescer_.HealthWritten(task.update.resource_id, kHealthProgressing);
  }
  switch (outcome.result) {
    case WriteResult::kOk: {
      if (task.update.event_time) {
        metrics_.Lag(clock_.Now() - *task.update.event_time, task.volatile_only);
      }
      SinkLog().Debug("hub status written", {{"resource", task.update.resource_id},
                                             {"application", app},
                                             {"volatile_only", task.volatile_only}});
      Save(std::move(task), ref);
      break;
    }
    case WriteResult::kNotFound:
      app_not_found_.Add(task.update.resource_id,
                         {{"resource", task.update.resource_id}, {"application", app}});
      Drop(task);
      break;
    case WriteResult::kInvalid:
      patch_refused_.Add(task.update.resource_id, {{"resource", task.update.resource_id},
                                                   {"application", app},
                                                   {"error", outcome.status.ToString()}});
      Drop(task);
      break;
    case WriteResult::kRetry: {
      const auto delay = BackoffDelay(settings_.retry_backoff, task.attempts);
      SinkLog().Debug("hub status write failed; retrying",
                      {{"resource", task.update.resource_id},
                       {"error", outcome.status.ToString()},
                       {"delay_ms", static_cast<int64_t>(delay.count())}});
      coalescer_.Requeue(std::move(task), delay);
      break;
    }
  }
  saver_.Flush();
  Pump();
}

void HubWrites::Save(WriteTask task, const store::HubAppRef* ref) {
  store::AppliedStatus row = coalescer_.Written(task);
  if (ref != nullptr) {
    row.appset_namespace = ref->appset_namespace;
    row.appset_name = ref->appset_name;
  }
  saver_.Add(std::move(row), std::move(task.acks));
}

void HubWrites::OnDeletionDone(WriteTask task, absl::StatusOr<bool> confirmed) {
  if (!confirmed.ok()) {
    metrics_.StoreError("deletion");
    const auto delay = BackoffDelay(settings_.retry_backoff, task.attempts);
    SinkLog().Warn(
        "cannot record a confirmed deletion; retrying",
        {{"resource", task.update.resource_id}, {"error", confirmed.status().ToString()}});
    coalescer_.Requeue(std::move(task), delay);
    return;
  }
  if (!*confirmed) {
    // A late or redelivered Deleted report for a resource that is live again (re-created) or
    // was never asked to go: the store changed nothing, and the resource keeps its state here.
    metrics_.Dropped(DropReason::kDeletedWhileLive);
    deleted_while_live_.Add(
        task.update.resource_id,
        {{"resource", task.update.resource_id}, {"application", AppOf(task.update.resource_id)}});
    Drop(task);
    Pump();
    return;
  }
  metrics_.DeletionConfirmed();
  SinkLog().Info("deletion confirmed by the agent; handed to the dispatcher",
                 {{"resource", task.update.resource_id}});
  auto later = coalescer_.Forget(task.update.resource_id);
  hub_apps_.Forget(task.update.resource_id);
  Release(task.acks);
  Release(later);
  Pump();
}

}  // namespace mmi::status_sink
