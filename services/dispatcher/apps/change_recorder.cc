#include "services/dispatcher/apps/change_recorder.h"

#include <utility>

#include "services/dispatcher/apps/decision.h"
#include "services/dispatcher/apps/internal/reconciler_log.h"

namespace mmi::dispatcher {
namespace {

using store::DeletionState;

}  // namespace

ChangeRecorder::ChangeRecorder(Deps deps, const ReconcilerSettings& settings)
    : deps_(std::move(deps)), settings_(settings) {
  deps_.outbox.SetPublishedHook([this](const store::OutboxEntry& entry) { OnPublished(entry); });
}

void ChangeRecorder::Flush(std::vector<PendingChange> batch) {
  ++inflight_;
  deps_.workers.Post([this, batch = std::move(batch)]() mutable {
    std::vector<store::DispatchChange> changes;
    changes.reserve(batch.size());
    for (const auto& pc : batch) {
      changes.push_back(pc.change);
    }
    auto seqs = deps_.store.Record(changes);
    deps_.loop.Post([this, batch = std::move(batch), seqs = std::move(seqs)]() mutable {
      OnRecorded(std::move(batch), std::move(seqs));
    });
  });
}

void ChangeRecorder::OnRecordFailed(const std::vector<PendingChange>& batch,
                                    const absl::Status& error) {
  const auto delay = deps_.retry.Next();
  internal::ReconcilerLog().Warn("could not record dispatch changes; retrying",
                                 {{"count", static_cast<int64_t>(batch.size())},
                                  {"error", std::string(error.message())},
                                  {"delay_ms", static_cast<int64_t>(delay.count())}});
  for (const auto& pc : batch) {
    const std::string& id = pc.change.resource.resource_id;
    TrackedResource* t = deps_.state.Find(id);
    if (t == nullptr) {
      continue;
    }
    const std::string key = t->Key();
    if (pc.change.event.action == store::OutboxAction::kDelete &&
        t->state == DeletionState::kLive) {
      // The deletion was decided but not recorded: it is decided again on the retry, unless
      // the Application came back meanwhile; until then it is live.
      deps_.state.UnmarkDeleting(id);
    }
    if (pc.created_entry) {
      deps_.state.Untrack(id);
    } else {
      t->busy = false;
      t->requeue = false;
    }
    deps_.retry_after(key, delay);
  }
  deps_.slot_freed(/*failed=*/true);
}

void ChangeRecorder::OnRecorded(std::vector<PendingChange> batch,
                                absl::StatusOr<std::vector<int64_t>> seqs) {
  --inflight_;
  if (seqs.ok() && seqs->size() != batch.size()) {
    seqs = absl::InternalError("store returned a wrong number of outbox seqs");
  }
  if (!seqs.ok()) {
    OnRecordFailed(batch, seqs.status());
    return;
  }
  deps_.retry.Reset();
  std::vector<RecordedEvent> entries;
  entries.reserve(batch.size());
  std::vector<std::string> requeue;
  for (size_t i = 0; i < batch.size(); ++i) {
    PendingChange& pc = batch[i];
    if (TrackedResource* t = deps_.state.Find(pc.change.resource.resource_id); t != nullptr) {
      t->busy = false;
      t->payload_hash = pc.change.resource.payload_hash;
      t->version = pc.change.resource.version;
      t->delivery = pc.change.resource.delivery;
      if (t->state == DeletionState::kDeleteConfirmed &&
          pc.change.resource.deletion_state == DeletionState::kDeleteRequested) {
        // The agent's Deleted came while this resend was recorded (the key was busy): it stands
        // (the store keeps the row confirmed too), and the key is decided again to finish the
        // deletion.
        t->requeue = true;
      } else {
        t->state = pc.change.resource.deletion_state;
      }
      ++t->unpublished;
      t->request_free_hash.clear();
      t->agent_hash.clear();
      if (pc.strip) {
        t->strip = std::move(pc.strip);
        t->strip_hash = t->payload_hash;
        t->request_free_hash = std::move(pc.request_free_hash);
      }
      if (t->requeue) {
        t->requeue = false;
        requeue.push_back(t->Key());
      }
    }
    pc.change.event.seq = (*seqs)[i];
    entries.push_back({std::move(pc.change.event), std::move(pc.event)});
  }
  deps_.outbox.Add(std::move(entries));
  for (const auto& key : requeue) {
    deps_.requeue(key);
  }
  deps_.slot_freed(/*failed=*/false);
}

void ChangeRecorder::OnPublished(const store::OutboxEntry& entry) {
  TrackedResource* t = deps_.state.Find(entry.resource_id);
  if (t == nullptr) {
    return;
  }
  if (t->unpublished > 0) {
    --t->unpublished;
  }
  if (entry.action == store::OutboxAction::kDelete && t->state == DeletionState::kDeleteRequested) {
    // Check again once the agent has had its time to confirm; each resend waits twice as long.
    if (t->delete_published_at.has_value()) {
      ++t->delete_resends;
      if (deps_.delete_resent) {
        deps_.delete_resent(t->id());
      }
    }
    t->delete_published_at = deps_.clock.MonotonicNow();
    deps_.retry_after(t->Key(), DeleteResendDelay(settings_, t->delete_resends));
  }
  if (t->strip && t->strip_hash == entry.payload_hash &&
      entry.action != store::OutboxAction::kDelete) {
    PropagatedRequest request = *std::move(t->strip);
    t->strip.reset();
    deps_.stripper.Submit(*t, std::move(request));
  }
}

}  // namespace mmi::dispatcher
