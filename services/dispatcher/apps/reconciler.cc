// The reconcile loop around Decide()/Apply(): activation and warm load, the key queue, the
// store round trips and the broker's acknowledgements.
#include "services/dispatcher/apps/reconciler.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "libs/cloudevents/resource_id.h"
#include "libs/common/log.h"
#include "libs/kube_object/object.h"

namespace mmi::dispatcher {
namespace {

using store::DeletionState;

const log::Logger& Log() {
  static const log::Logger logger("dispatcher.reconciler");
  return logger;
}

}  // namespace

Reconciler::Reconciler(ReconcilerDeps deps, ReconcilerSettings settings)
    : loop_(deps.loop),
      workers_(deps.workers),
      store_(deps.store),
      hub_(deps.hub),
      apps_(deps.apps),
      clusters_(deps.clusters),
      outbox_(deps.outbox),
      metrics_(deps.metrics),
      clock_(deps.clock),
      settings_(std::move(settings)),
      queue_(settings_.queue_capacity),
      state_(metrics_.tracked()),
      unknown_({.loop = loop_,
                .workers = workers_,
                .hub = hub_,
                .metrics = metrics_,
                .clock = clock_,
                .retry = [this](const std::string& key) { Enqueue(key); }},
               settings_),
      retry_backoff_(settings_.retry),
      load_backoff_(settings_.retry),
      early_backoff_(settings_.retry) {
  outbox_.SetPublishedHook([this](const store::OutboxEntry& entry) { OnPublished(entry); });
}

cloudevents::Timestamp Reconciler::Now() const {
  return std::chrono::time_point_cast<std::chrono::nanoseconds>(clock_.Now());
}

// ---------------------------------------------------------------------------------------------
// Activation and warm load

void Reconciler::Activate() {
  if (activating_.exchange(true)) {
    return;
  }
  workers_.Post([this] { LoadState(); });
}

void Reconciler::Deactivate() {
  deactivated_.store(true);
  active_.store(false);
}

void Reconciler::LoadState() {
  Loaded loaded;
  absl::Status status = store_.ForEachResource(
      [&](const store::DispatchedResource& r) { loaded.resources.push_back(r); });
  int64_t after = 0;
  while (status.ok()) {
    auto page = store_.PendingOutbox(after, settings_.outbox_recover_page);
    if (!page.ok()) {
      status = page.status();
      break;
    }
    if (page->empty()) {
      break;
    }
    after = page->back().seq;
    const bool last = static_cast<int>(page->size()) < settings_.outbox_recover_page;
    loaded.outbox.insert(loaded.outbox.end(), std::make_move_iterator(page->begin()),
                         std::make_move_iterator(page->end()));
    if (last) {
      break;
    }
  }
  if (!status.ok()) {
    loop_.Post([this, status] {
      const auto delay = load_backoff_.Next();
      Log().Warn("could not load the dispatch state; retrying",
                 {{"error", std::string(status.message())},
                  {"delay_ms", static_cast<int64_t>(delay.count())}});
      loop_.PostAfter(delay, [this] { workers_.Post([this] { LoadState(); }); });
    });
    return;
  }
  loop_.Post([this, loaded = std::move(loaded)]() mutable { InstallState(std::move(loaded)); });
}

void Reconciler::InstallState(Loaded loaded) {
  // What is tracked already was decided while the load ran (EnqueueEarly): newer than what the
  // load read, with its outbox events added (the older ones) or on their way (the new ones).
  absl::flat_hash_set<std::string> early;
  early.reserve(state_.size());
  for (const auto& [id, t] : state_.resources()) {
    early.insert(id);
  }
  for (auto& r : loaded.resources) {
    if (early.contains(r.resource_id)) {
      continue;
    }
    state_.TrackStored(std::move(r));
  }
  const size_t outbox_read = loaded.outbox.size();
  std::erase_if(loaded.outbox,
                [&](const store::OutboxEntry& e) { return early.contains(e.resource_id); });
  for (const auto& e : loaded.outbox) {
    if (TrackedResource* t = state_.Find(e.resource_id); t != nullptr) {
      ++t->unpublished;
    }
  }
  early_wanted_.clear();
  early_fetched_.clear();
  early_ready_.clear();
  for (const auto& id : early_confirmations_) {
    if (TrackedResource* t = state_.Find(id);
        t != nullptr && t->state == DeletionState::kDeleteRequested) {
      t->state = DeletionState::kDeleteConfirmed;  // finished by the sweep
    }
  }
  early_confirmations_.clear();
  // Delete requests published before the restart and still unconfirmed: their resend clock
  // starts now (a pending one starts when it is published).
  const auto now = clock_.MonotonicNow();
  for (auto& [id, t] : state_.resources()) {
    // (one decided while the load ran has its clock already, set when it was published)
    if (t.state == DeletionState::kDeleteRequested && t.unpublished == 0 && !early.contains(id)) {
      t.delete_published_at = now;
      EnqueueAfter(t.Key(), DeleteResendDelay(settings_, 0));
    }
  }
  Log().Info("dispatch state loaded",
             {{"resources", static_cast<int64_t>(state_.size())},
              {"outbox", static_cast<int64_t>(outbox_read)},
              {"tracked_while_loading", static_cast<int64_t>(early.size())}});
  loaded_.store(true);
  active_.store(!deactivated_.load());
  // Events recorded but not accepted before the restart go out first, with their original ids.
  outbox_.Add(std::move(loaded.outbox));
  // Deletions confirmed while we were not running are finished by the first ProcessKeys() that
  // finds the caches synced (SweepConfirmedDeletions), like every other decision.
  EnqueueAll();
  ScheduleProcess();
}

void Reconciler::EnqueueEarly(const std::string& key) {
  if (loaded_.load() || deactivated_.load()) {
    return;  // the key is queued: the loaded state decides it
  }
  if (early_fetched_.contains(key)) {
    early_ready_.insert(key);
    DecideEarly();
    return;
  }
  early_wanted_.insert(key);
  EarlyFetch();
}

void Reconciler::EarlyFetch() {
  if (early_fetching_ || early_wanted_.empty() || loaded_.load() || deactivated_.load()) {
    return;
  }
  early_fetching_ = true;
  std::vector<std::string> keys;
  std::vector<store::HubKey> hub_keys;
  // The id each cached Application would be dispatched as: another key may hold it (two keys
  // can name one work), and Decide() must see that row to refuse the second one.
  std::vector<std::string> ids;
  for (auto it = early_wanted_.begin();
       it != early_wanted_.end() && keys.size() < settings_.batch_size;) {
    auto [ns, name] = kube::SplitObjectKey(*it);
    if (const kube::ObjectPtr app = apps_.Get(ns, name); app != nullptr) {
      if (std::optional<std::string> cluster = PullModelCluster(*app); cluster.has_value()) {
        ids.push_back(cloudevents::WorkResourceId(settings_.payload.source_id, *cluster,
                                                  absl::StrCat(ns, "-", name)));
      }
    }
    hub_keys.push_back({std::move(ns), std::move(name)});
    keys.push_back(*it);
    early_wanted_.erase(it++);
  }
  workers_.Post([this, keys = std::move(keys), hub_keys = std::move(hub_keys),
                 ids = std::move(ids)]() mutable {
    auto rows = store_.LoadApplications(hub_keys, ids);
    loop_.Post([this, keys = std::move(keys), rows = std::move(rows)]() mutable {
      OnEarlyFetched(std::move(keys), std::move(rows));
    });
  });
}

void Reconciler::OnEarlyFetched(std::vector<std::string> keys,
                                absl::StatusOr<store::ApplicationRows> rows) {
  early_fetching_ = false;
  if (loaded_.load() || deactivated_.load()) {
    return;  // the installed state is the newer one and the keys are queued; or we stop
  }
  if (!rows.ok()) {
    // They wait for the warm load if it ends first (they are queued too).
    const auto delay = early_backoff_.Next();
    Log().Warn("could not read the rows of changed Applications; retrying",
               {{"count", static_cast<int64_t>(keys.size())},
                {"error", std::string(rows.status().message())},
                {"delay_ms", static_cast<int64_t>(delay.count())}});
    early_wanted_.insert(keys.begin(), keys.end());
    loop_.PostAfter(delay, [this] { EarlyFetch(); });
    return;
  }
  early_backoff_.Reset();
  absl::flat_hash_set<std::string> tracked_now;
  for (auto& r : rows->resources) {
    if (state_.Find(r.resource_id) != nullptr) {
      continue;  // decided here already (two keys naming one work): ours is newer
    }
    TrackedResource& t = state_.TrackStored(std::move(r));
    if (t.state == DeletionState::kDeleteRequested && early_confirmations_.erase(t.id()) > 0) {
      t.state = DeletionState::kDeleteConfirmed;  // finished by the sweep
    }
    tracked_now.insert(t.id());
  }
  // Events recorded before the restart and not accepted go out before anything decided now
  // (the outbox keeps each resource's events in seq order).
  std::vector<store::OutboxEntry> pending;
  for (auto& e : rows->outbox) {
    if (tracked_now.contains(e.resource_id)) {
      ++state_.Find(e.resource_id)->unpublished;
      pending.push_back(std::move(e));
    }
  }
  if (!pending.empty()) {
    outbox_.Add(std::move(pending));
  }
  for (auto& key : keys) {
    early_fetched_.insert(key);
    early_ready_.insert(std::move(key));
  }
  DecideEarly();
  EarlyFetch();
}

void Reconciler::DecideEarly() {
  if (loaded_.load() || deactivated_.load() || early_ready_.empty()) {
    return;
  }
  if (inflight_batches_.load() >= settings_.max_inflight_batches || OutboxFull()) {
    return;  // OnRecorded() or OnOutboxDrained() calls again
  }
  if (!clusters_.synced()) {
    // An unknown cluster may only be unlisted yet.
    if (!early_wait_posted_) {
      early_wait_posted_ = true;
      loop_.PostAfter(std::chrono::milliseconds(200), [this] {
        early_wait_posted_ = false;
        DecideEarly();
      });
    }
    return;
  }
  std::vector<PendingChange> batch;
  size_t decided = 0;
  for (size_t n = 0; n < settings_.batch_size && !early_ready_.empty(); ++n) {
    const std::string key = *early_ready_.begin();
    early_ready_.erase(early_ready_.begin());
    // An absent Application waits for the complete list (it is queued).
    if (Reconcile(key, /*absence_is_final=*/false, batch)) {
      ++decided;
    }
  }
  metrics_.decided_before_load().Increment(static_cast<double>(decided));
  if (!batch.empty()) {
    FlushBatch(std::move(batch));  // OnRecorded() takes the rest
  } else if (!early_ready_.empty()) {
    loop_.Post([this] { DecideEarly(); });
  }
}

bool Reconciler::CachesSynced() const { return clusters_.synced() && apps_.synced(); }

void Reconciler::SweepConfirmedDeletions() {
  swept_ = true;
  std::vector<std::string> confirmed;
  for (auto& [id, t] : state_.resources()) {
    if (t.state == DeletionState::kDeleteConfirmed) {
      confirmed.push_back(id);
    }
  }
  for (const auto& id : confirmed) {
    if (TrackedResource* t = state_.Find(id); t != nullptr && !t->busy) {
      FinishDeletion(*t);
    }
  }
}

void Reconciler::EnqueueAll() {
  // Every cached Application, and every known resource (its Application may have vanished).
  for (const auto& key : apps_.Keys()) {
    Enqueue(key);
  }
  for (const auto& entry : state_.keys()) {
    Enqueue(entry.first);
  }
}

// ---------------------------------------------------------------------------------------------
// Key queue

void Reconciler::Enqueue(const std::string& key, bool urgent) {
  if (urgent && activating_.load() && !loaded_.load()) {
    loop_.Post([this, key] { EnqueueEarly(key); });  // and queued, for the loaded state
  }
  const kube::WorkQueue::AddResult added = queue_.Add(key, urgent);
  // Dropped on a full queue: a full resync follows once it drained (ProcessKeys).
  metrics_.queue_depth().Set(static_cast<double>(queue_.Len()));
  if (added == kube::WorkQueue::AddResult::kAdded && active_.load() &&
      !process_posted_.exchange(true)) {
    loop_.Post([this] { ProcessKeys(); });
  }
}

void Reconciler::EnqueueAfter(const std::string& key, std::chrono::milliseconds delay) {
  loop_.PostAfter(delay, [this, key] {
    Enqueue(key);
    if (!loaded_.load() && early_fetched_.contains(key)) {
      EnqueueEarly(key);  // decided before the load (a retry): not held up by it now either
    }
  });
}

void Reconciler::ScheduleProcess() {
  if (queue_.Len() == 0 || process_posted_.exchange(true)) {
    return;
  }
  loop_.Post([this] { ProcessKeys(); });
}

size_t Reconciler::queue_depth() const { return queue_.Len(); }

bool Reconciler::busy() const {
  if (inflight_batches_.load() > 0) {
    return true;
  }
  return queue_.Len() > 0 && active_.load();
}

bool Reconciler::IsDeleting(const std::string& resource_id) const {
  return state_.IsDeleting(resource_id);
}

void Reconciler::WaitForSync() {
  if (sync_wait_posted_) {
    return;
  }
  sync_wait_posted_ = true;
  loop_.PostAfter(std::chrono::milliseconds(200), [this] {
    sync_wait_posted_ = false;
    if (!CachesSynced()) {
      WaitForSync();      // until both lists are complete
      ScheduleProcess();  // keys queued while the ManagedCluster list was read go ahead now
      return;
    }
    if (active_.load() && !swept_) {
      SweepConfirmedDeletions();
    }
    if (deferred_until_synced_) {
      // The absent keys put aside meanwhile (and every other): absence means something now.
      deferred_until_synced_ = false;
      EnqueueAll();
    }
    ScheduleProcess();
  });
}

bool Reconciler::OutboxFull() {
  if (outbox_paused_) {
    return true;
  }
  if (settings_.max_outbox == 0) {
    return false;
  }
  const size_t count = outbox_.ready_or_in_flight();
  if (count < settings_.max_outbox) {
    return false;
  }
  outbox_paused_ = true;
  outbox_paused_at_ = clock_.MonotonicNow();
  metrics_.outbox_paused().Set(1);
  const size_t resume_at = settings_.max_outbox / 2;
  Log().Warn("outbox full: taking no new keys until the broker has taken some of it",
             {{"ready_or_in_flight", static_cast<int64_t>(count)},
              {"max_outbox", static_cast<int64_t>(settings_.max_outbox)},
              {"resume_at", static_cast<int64_t>(resume_at)}});
  outbox_.NotifyWhenDrainedTo(resume_at, [this] { OnOutboxDrained(); });
  return true;
}

void Reconciler::OnOutboxDrained() {
  outbox_paused_ = false;
  metrics_.outbox_paused().Set(0);
  const auto paused = std::chrono::duration_cast<std::chrono::milliseconds>(clock_.MonotonicNow() -
                                                                            outbox_paused_at_);
  Log().Info("outbox drained: taking keys again",
             {{"paused_ms", static_cast<int64_t>(paused.count())},
              {"ready_or_in_flight", static_cast<int64_t>(outbox_.ready_or_in_flight())}});
  ScheduleProcess();
  DecideEarly();
}

void Reconciler::ProcessKeys() {
  process_posted_.store(false);
  if (!active_.load() || inflight_batches_.load() >= settings_.max_inflight_batches) {
    return;  // OnRecorded schedules again
  }
  if (OutboxFull()) {
    return;  // OnOutboxDrained() schedules again
  }
  if (!clusters_.synced()) {
    // Until the ManagedCluster list is complete an unknown cluster may only be unlisted yet.
    WaitForSync();
    return;
  }
  // While the Application list is still read (minutes for 300,000 after a restart), keys whose
  // Application is cached are decided at once (the watch delivers changes meanwhile); a key whose
  // Application is absent may only be unlisted yet, so it waits for the complete list.
  const bool apps_synced = apps_.synced();
  if (apps_synced && !swept_) {
    SweepConfirmedDeletions();
  } else if (!apps_synced) {
    WaitForSync();  // the sweep and the deferred keys follow the list's end
  }
  std::vector<std::string> keys;
  while (keys.size() < settings_.batch_size) {
    std::optional<std::string> key = queue_.Get();
    if (!key.has_value()) {
      break;
    }
    keys.push_back(*std::move(key));
  }
  metrics_.queue_depth().Set(static_cast<double>(queue_.Len()));
  const bool resync = queue_.TakeOverflow();
  std::vector<PendingChange> batch;
  size_t deferred = 0;
  for (const auto& key : keys) {
    if (!Reconcile(key, /*absence_is_final=*/apps_synced, batch)) {
      ++deferred;
    }
    queue_.Done(key);
  }
  if (!batch.empty()) {
    FlushBatch(std::move(batch));
  }
  if (deferred > 0) {
    if (!deferred_until_synced_) {
      Log().Info(
          "deciding the cached Applications while the Application list is read; those not "
          "cached yet wait for the complete list");
    }
    deferred_until_synced_ = true;
    metrics_.deferred_until_synced().Increment(static_cast<double>(deferred));
  }
  if (resync) {
    Log().Warn("work queue overflowed; resyncing every Application");
    EnqueueAll();
  }
  ScheduleProcess();
}

// ---------------------------------------------------------------------------------------------
// Store round trips

void Reconciler::FlushBatch(std::vector<PendingChange> batch) {
  ++inflight_batches_;
  workers_.Post([this, batch = std::move(batch)]() mutable {
    std::vector<store::DispatchChange> changes;
    changes.reserve(batch.size());
    for (const auto& pc : batch) {
      changes.push_back(pc.change);
    }
    auto seqs = store_.Record(changes);
    loop_.Post([this, batch = std::move(batch), seqs = std::move(seqs)]() mutable {
      OnRecorded(std::move(batch), std::move(seqs));
    });
  });
}

void Reconciler::OnRecordFailed(const std::vector<PendingChange>& batch,
                                const absl::Status& error) {
  const auto delay = retry_backoff_.Next();
  Log().Warn("could not record dispatch changes; retrying",
             {{"count", static_cast<int64_t>(batch.size())},
              {"error", std::string(error.message())},
              {"delay_ms", static_cast<int64_t>(delay.count())}});
  for (const auto& pc : batch) {
    const std::string& id = pc.change.resource.resource_id;
    TrackedResource* t = state_.Find(id);
    if (t == nullptr) {
      continue;
    }
    const std::string key = t->Key();
    if (pc.change.event.action == store::OutboxAction::kDelete &&
        t->state == DeletionState::kLive) {
      // The deletion was decided but not recorded: it is decided again on the retry, unless
      // the Application came back meanwhile; until then it is live.
      state_.UnmarkDeleting(id);
    }
    if (pc.created_entry) {
      state_.Untrack(id);
    } else {
      t->busy = false;
      t->requeue = false;
    }
    EnqueueAfter(key, delay);
  }
  ScheduleProcess();
  DecideEarly();  // keys that waited for a free batch slot, while the state loads
}

void Reconciler::OnRecorded(std::vector<PendingChange> batch,
                            absl::StatusOr<std::vector<int64_t>> seqs) {
  --inflight_batches_;
  if (seqs.ok() && seqs->size() != batch.size()) {
    seqs = absl::InternalError("store returned a wrong number of outbox seqs");
  }
  if (!seqs.ok()) {
    OnRecordFailed(batch, seqs.status());
    return;
  }
  retry_backoff_.Reset();
  std::vector<RecordedEvent> entries;
  entries.reserve(batch.size());
  std::vector<std::string> requeue;
  for (size_t i = 0; i < batch.size(); ++i) {
    PendingChange& pc = batch[i];
    if (TrackedResource* t = state_.Find(pc.change.resource.resource_id); t != nullptr) {
      t->busy = false;
      t->payload_hash = pc.change.resource.payload_hash;
      t->version = pc.change.resource.version;
      t->state = pc.change.resource.deletion_state;
      ++t->unpublished;
      if (pc.strip) {
        t->strip = std::move(pc.strip);
        t->strip_hash = t->payload_hash;
      }
      if (t->requeue) {
        t->requeue = false;
        requeue.push_back(t->Key());
      }
    }
    pc.change.event.seq = (*seqs)[i];
    entries.push_back({std::move(pc.change.event), std::move(pc.event)});
  }
  outbox_.Add(std::move(entries));
  for (const auto& key : requeue) {
    Enqueue(key);
    if (!loaded_.load()) {
      EnqueueEarly(key);  // changed again while its decision was recorded
    }
  }
  DecideEarly();  // keys that waited for a free batch slot, while the state loads
  ScheduleProcess();
}

void Reconciler::OnPublished(const store::OutboxEntry& entry) {
  TrackedResource* t = state_.Find(entry.resource_id);
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
    }
    t->delete_published_at = clock_.MonotonicNow();
    EnqueueAfter(t->Key(), DeleteResendDelay(settings_, t->delete_resends));
  }
  if (t->strip && t->strip_hash == entry.payload_hash &&
      entry.action != store::OutboxAction::kDelete) {
    PropagatedRequest request = *std::move(t->strip);
    t->strip.reset();
    SubmitStrip(*t, std::move(request));
  }
}

// ---------------------------------------------------------------------------------------------
// Events from other threads

void Reconciler::OnDeletionConfirmed(const std::string& resource_id) {
  loop_.Post([this, resource_id] {
    TrackedResource* t = state_.Find(resource_id);
    if (t == nullptr) {
      if (!loaded_.load()) {
        early_confirmations_.insert(resource_id);  // applied by InstallState()
      }
      return;
    }
    if (t->state == DeletionState::kLive) {
      // A confirmation for something we still consider live can only be stale; the store row
      // says otherwise only if the status sink saw a Deleted for a resource we re-created.
      Log().Warn("deletion confirmed for a live resource; ignoring", {{"resource", t->Key()}});
      return;
    }
    t->state = DeletionState::kDeleteConfirmed;
    if (!swept_) {
      return;  // the caches are not synced yet: the sweep finishes it (with its finalizer)
    }
    if (t->busy) {
      t->requeue = true;
      return;
    }
    FinishDeletion(*t);
  });
}

void Reconciler::OnClusterAdded(const std::string& cluster) {
  loop_.Post([this, cluster] { unknown_.OnClusterAdded(cluster); });
}

std::optional<Reconciler::ResourceView> Reconciler::ResourceForTest(
    const std::string& resource_id) const {
  const TrackedResource* t = state_.Find(resource_id);
  if (t == nullptr) {
    return std::nullopt;
  }
  return ResourceView{t->Key(), t->identity.cluster, t->payload_hash, t->version,
                      t->state, t->unpublished};
}

}  // namespace mmi::dispatcher
