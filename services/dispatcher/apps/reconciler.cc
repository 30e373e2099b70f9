// The reconcile loop: the key queue, the loop's turn (ProcessKeys) and the wiring of the
// collaborators that decide, record, publish and finish.
#include "services/dispatcher/apps/reconciler.h"

#include <functional>
#include <utility>

#include "libs/kube_object/object.h"
#include "services/dispatcher/apps/decision.h"
#include "services/dispatcher/apps/handover.h"
#include "services/dispatcher/apps/internal/reconciler_log.h"

namespace mmi::dispatcher {
Reconciler::Reconciler(ReconcilerDeps deps, ReconcilerSettings settings)
    : loop_(deps.loop),
      apps_(deps.apps),
      clusters_(deps.clusters),
      metrics_(deps.metrics),
      clock_(deps.clock),
      settings_(std::move(settings)),
      queue_(settings_.queue_capacity),
      state_(metrics_.tracked()),
      retry_backoff_(settings_.retry),
      unknown_({.loop = loop_,
                .workers = deps.workers,
                .hub = deps.hub,
                .metrics = metrics_,
                .clock = clock_,
                .retry = EnqueueFn()},
               settings_),
      stripper_({.loop = loop_,
                 .workers = deps.workers,
                 .hub = deps.hub,
                 .state = state_,
                 .metrics = metrics_,
                 .retry = retry_backoff_,
                 .retry_after = EnqueueAfterFn()}),
      finisher_(FinisherDeps(deps)),
      check_(
          deps.resource_exists
              ? std::make_unique<DeletionCheck>(
                    DeletionCheck::Deps{
                        .loop = loop_,
                        .workers = deps.workers,
                        .clock = clock_,
                        .metrics = metrics_,
                        .exists = deps.resource_exists,
                        .waiting = [this](const std::string& id) { return WaitingForDeletion(id); },
                        .gone = [this](const std::string& id) { OnGoneFromMaestro(id); }},
                    settings_.deletion_check)
              : nullptr),
      gate_(deps.outbox, metrics_, clock_, settings_.max_outbox,
            [this] {
              ScheduleProcess();
              loader_.DecideEarly();
            }),
      recorder_(RecorderDeps(deps), settings_),
      applier_({.state = state_,
                .unknown = unknown_,
                .finisher = finisher_,
                .stripper = stripper_,
                .metrics = metrics_,
                .clock = clock_,
                .loaded = [this] { return loader_.loaded(); }},
               settings_),
      loader_(LoaderDeps(deps), settings_),
      manifests_(deps.manifests),
      manifest_writes_({.workers = deps.workers,
                        .store = deps.store,
                        .hub = deps.hub,
                        .metrics = metrics_,
                        .clock = clock_},
                       settings_),
      ack_check_(settings_.ack_check.enabled
                     ? std::make_unique<AckCheck>(
                           AckCheck::Deps{.loop = loop_,
                                          .workers = deps.workers,
                                          .store = deps.store,
                                          .metrics = metrics_,
                                          .republish =
                                              [this](const store::UnacknowledgedResource& r) {
                                                return RepublishUnacknowledged(r);
                                              },
                                          .handover_acked =
                                              [this](const store::AcknowledgedHandover& h) {
                                                OnHandoverAcked(h);
                                              }},
                           settings_.ack_check)
                     : nullptr) {}

std::function<void(const std::string&)> Reconciler::EnqueueFn() {
  return [this](const std::string& key) { Enqueue(key); };
}

std::function<void(const std::string&, std::chrono::milliseconds)> Reconciler::EnqueueAfterFn() {
  return
      [this](const std::string& key, std::chrono::milliseconds delay) { EnqueueAfter(key, delay); };
}

DeletionFinisher::Deps Reconciler::FinisherDeps(const ReconcilerDeps& deps) {
  return {.loop = loop_,
          .workers = deps.workers,
          .store = deps.store,
          .hub = deps.hub,
          .apps = apps_,
          .state = state_,
          .metrics = metrics_,
          .clock = clock_,
          .retry = retry_backoff_,
          .enqueue = EnqueueFn(),
          .retry_after = EnqueueAfterFn()};
}

ChangeRecorder::Deps Reconciler::RecorderDeps(const ReconcilerDeps& deps) {
  return {.loop = loop_,
          .workers = deps.workers,
          .store = deps.store,
          .outbox = deps.outbox,
          .state = state_,
          .stripper = stripper_,
          .clock = clock_,
          .retry = retry_backoff_,
          .requeue = [this](const std::string& key) { Requeue(key); },
          .retry_after = EnqueueAfterFn(),
          .slot_freed = [this](bool failed) { OnSlotFreed(failed); },
          .delete_resent =
              [this](const std::string& id) {
                if (check_) {
                  check_->Submit(id);
                }
              }};
}

StateLoader::Deps Reconciler::LoaderDeps(const ReconcilerDeps& deps) {
  return {.loop = loop_,
          .workers = deps.workers,
          .store = deps.store,
          .apps = apps_,
          .state = state_,
          .outbox = deps.outbox,
          .recorder = recorder_,
          .gate = gate_,
          .metrics = metrics_,
          .clock = clock_,
          .clusters_synced = [this] { return clusters_.synced(); },
          .reconcile =
              [this](const std::string& key, std::vector<PendingChange>& batch) {
                // An absent Application waits for the complete list (it is queued).
                return Reconcile(key, /*absence_is_final=*/false, batch);
              },
          .enqueue_after = EnqueueAfterFn(),
          .installed = [this] { OnInstalled(); }};
}

// ---------------------------------------------------------------------------------------------
// Activation

void Reconciler::Activate() { loader_.Start(); }

void Reconciler::Deactivate() {
  loader_.Deactivate();
  active_.store(false);
  if (ack_check_) {
    loop_.Post([this] { ack_check_->Stop(); });
  }
}

void Reconciler::OnInstalled() {
  active_.store(!loader_.deactivated());
  // Deletions confirmed while we were not running are finished by the first ProcessKeys() that
  // finds the caches synced (the DeletionFinisher's sweep), like every other decision.
  EnqueueAll();
  ScheduleProcess();
  if (ack_check_ && active_.load()) {
    ack_check_->Start();
  }
}

bool Reconciler::RepublishUnacknowledged(const store::UnacknowledgedResource& resource) {
  TrackedResource* t = state_.Find(resource.resource_id);
  if (t == nullptr || t->state != store::DeletionState::kLive || t->version != resource.version ||
      t->busy || t->unpublished > 0 || t->republish) {
    return false;  // changed since it was listed, or already on its way
  }
  if (t->ack_republished_at.has_value()) {
    const auto backoff = std::min<std::chrono::seconds>(
        settings_.ack_check.grace * (int64_t{1} << std::min(t->ack_republishes, 20)),
        settings_.ack_check.max_backoff);
    if (clock_.MonotonicNow() < *t->ack_republished_at + backoff) {
      return false;
    }
  }
  t->republish = true;
  Enqueue(t->Key(), /*urgent=*/true);
  return true;
}

void Reconciler::OnSlotFreed(bool failed) {
  // The order of the two posts is the one the loop always had.
  if (failed) {
    ScheduleProcess();
    loader_.DecideEarly();  // keys that waited for a free batch slot, while the state loads
  } else {
    loader_.DecideEarly();
    ScheduleProcess();
  }
}

bool Reconciler::CachesSynced() const { return clusters_.synced() && apps_.synced(); }

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
  if (urgent && loader_.started() && !loader_.loaded()) {
    loop_.Post([this, key] { loader_.EnqueueEarly(key); });  // and queued, for the loaded state
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
    if (!loader_.loaded() && loader_.FetchedEarly(key)) {
      loader_.EnqueueEarly(key);  // decided before the load (a retry): not held up by it now
    }
  });
}

void Reconciler::Requeue(const std::string& key) {
  Enqueue(key);
  if (!loader_.loaded()) {
    loader_.EnqueueEarly(key);  // changed again while its decision was recorded
  }
}

void Reconciler::ScheduleProcess() {
  if (queue_.Len() == 0 || process_posted_.exchange(true)) {
    return;
  }
  loop_.Post([this] { ProcessKeys(); });
}

size_t Reconciler::queue_depth() const { return queue_.Len(); }

bool Reconciler::busy() const {
  if (recorder_.inflight() > 0) {
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
    if (active_.load() && !finisher_.swept()) {
      finisher_.Sweep();
    }
    if (deferred_until_synced_) {
      // The absent keys put aside meanwhile (and every other): absence means something now.
      deferred_until_synced_ = false;
      EnqueueAll();
    }
    ScheduleProcess();
  });
}

void Reconciler::ProcessKeys() {
  process_posted_.store(false);
  if (!active_.load() || recorder_.inflight() >= settings_.max_inflight_batches) {
    return;  // the ChangeRecorder schedules again
  }
  if (gate_.Full()) {
    return;  // the OutboxGate schedules again
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
  if (apps_synced && !finisher_.swept()) {
    finisher_.Sweep();
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
    recorder_.Flush(std::move(batch));
  }
  if (deferred > 0) {
    if (!deferred_until_synced_) {
      internal::ReconcilerLog().Info(
          "deciding the cached Applications while the Application list is read; those not "
          "cached yet wait for the complete list");
    }
    deferred_until_synced_ = true;
    metrics_.deferred_until_synced().Increment(static_cast<double>(deferred));
  }
  if (resync) {
    internal::ReconcilerLog().Warn("work queue overflowed; resyncing every Application");
    EnqueueAll();
  }
  ScheduleProcess();
}

bool Reconciler::Reconcile(const std::string& key, bool absence_is_final,
                           std::vector<PendingChange>& batch) {
  const auto [ns, name] = kube::SplitObjectKey(key);
  const kube::ObjectPtr app = apps_.Get(ns, name);
  if (app == nullptr && !absence_is_final) {
    return false;
  }
  TrackedResource* t = state_.FindByKey(key);
  PreparedDelivery prepared;
  if (manifests_ != nullptr) {
    if (app == nullptr || !PullModelCluster(*app)) {
      manifests_->Forget(key);
      // With the resource id: the row kept for it goes too (else one per deleted Application
      // stays for the life of the process).
      manifest_writes_.Forget(key, t != nullptr ? t->id() : "");
    } else if (!DeletionTimestampOf(*app) && (t == nullptr || !t->busy) &&
               !PlanManifests(key, *app, t, prepared)) {
      return true;
    }
  }
  const std::optional<store::ManifestRender>& render = prepared.render;
  const Observation seen{.key = key,
                         .app = app.get(),
                         .tracked = t,
                         .state = &state_,
                         .clusters = &clusters_,
                         .now = clock_.MonotonicNow(),
                         .prepared = prepared.dispatch ? &*prepared.dispatch : nullptr};
  Decision decision = Decide(seen, settings_);
  if (decision.action == Decision::Action::kPublishSpec) {
    decision.delivery = prepared.delivery;
  }
  if (render) {
    if (decision.action == Decision::Action::kPublishSpec) {
      decision.manifest_render = render;  // recorded with the bundle, one transaction
      manifest_writes_.Recorded(*render);
    } else if (t != nullptr && t->identity.resource_id == render->resource_id &&
               t->state == store::DeletionState::kLive) {
      // The bundle is unchanged (a new revision rendering the same output, a render error or
      // its end): only the row, when it changed.
      manifest_writes_.PutRender(*render);
    }
  }
  applier_.Apply(key, app.get(), t, decision, batch);
  return true;
}

bool Reconciler::PlanManifests(const std::string& key, const nlohmann::json& app,
                               const TrackedResource* t, PreparedDelivery& prepared) {
  const PropagatedRequest request = PropagatedRequestOf(app);
  // What a hand-over starts from: the delivery recorded for the live resource. None without the
  // end-to-end acknowledgement (dispatch.ackCheck off): the way asked for then goes at once.
  std::optional<store::Delivery> recorded;
  if (t != nullptr && t->state == store::DeletionState::kLive && ack_check_ != nullptr) {
    recorded = t->delivery;
  }
  ManifestPlan plan = manifests_->Prepare(key, app, request.refresh.has_value(),
                                          recorded.has_value() && DeliversManifests(*recorded));
  switch (plan.kind) {
    case ManifestPlan::Kind::kApplication:
      // Also the switch back from a released Application: the finalizer returns.
      manifest_writes_.Forget(key, "");
      return true;
    case ManifestPlan::Kind::kRefused:
      if (t == nullptr) {
        manifest_writes_.ShowProblem(key, app, plan.message);
      } else {
        // Delivered before (the other way, or before the refusal): left as it is on the spoke.
        internal::ReconcilerLog().Warn(
            "Application cannot be delivered as manifests; its last "
            "delivery stays",
            {{"resource", key}, {"error", plan.message}});
      }
      metrics_.Decision("manifests_refused");
      return false;
    case ManifestPlan::Kind::kPending:
      metrics_.Decision("manifests_rendering");
      return false;
    case ManifestPlan::Kind::kRendered:
      break;
  }
  if (request.refresh) {
    // Asked and answered: the refresh annotation goes, as Argo CD's controller removes it.
    const auto [ns, name] = kube::SplitObjectKey(key);
    manifest_writes_.StripRefresh(std::string(ns), std::string(name), *request.refresh);
  }
  if (!plan.dispatch) {
    // The first render failed: no bundle, no resource row for the status sink to show it by.
    if (t == nullptr) {
      manifest_writes_.ShowProblem(key, app, plan.render.render_error.value_or("no manifests"));
    } else if (t->identity.resource_id == plan.render.resource_id &&
               t->state == store::DeletionState::kLive) {
      manifest_writes_.PutRender(plan.render);
    }
    return false;
  }
  PlanHandover(key, app, t, recorded, std::move(plan), prepared);
  return true;
}

void Reconciler::PlanHandover(const std::string& key, const nlohmann::json& app,
                              const TrackedResource* t, std::optional<store::Delivery> recorded,
                              ManifestPlan plan, PreparedDelivery& prepared) {
  if (t != nullptr && t->id() != plan.dispatch->resource_id) {
    recorded.reset();  // moved to another cluster: deleted there, created here
  }
  const bool acknowledged =
      t != nullptr && t->version > 0 && t->handover_acked_version == t->version;
  prepared.delivery = NextDelivery(!plan.asks_application, recorded, acknowledged);
  if (IsFirstStep(prepared.delivery) && recorded != prepared.delivery) {
    internal::ReconcilerLog().Info(
        "switching delivery modes: sending the first step of the hand-over",
        {{"resource", key}, {"step", std::string(store::DeliveryName(prepared.delivery))}});
  }
  switch (prepared.delivery) {
    case store::Delivery::kManifests:
      manifest_writes_.Forget(key, "");
      prepared.render = plan.render;
      prepared.dispatch = *std::move(plan.dispatch);
      return;
    case store::Delivery::kOrphaningManifests:
      manifest_writes_.Forget(key, "");
      prepared.render = plan.render;
      prepared.dispatch = Orphaning(*std::move(plan.dispatch));
      return;
    case store::Delivery::kReleasingApplication: {
      // Still the Application, without the finalizer that would prune on its deletion. A
      // failure leaves `dispatch` unset: Decide() builds it and reports why it cannot.
      absl::StatusOr<Dispatch> released =
          BuildDispatch(WithoutPruningFinalizers(app), settings_.payload);
      if (released.ok()) {
        prepared.dispatch = *std::move(released);
      }
      return;
    }
    case store::Delivery::kApplication:
      return;  // the hand-over's second step: Decide() builds the Application
  }
}

void Reconciler::OnHandoverAcked(const store::AcknowledgedHandover& handover) {
  TrackedResource* t = state_.Find(handover.resource_id);
  if (t == nullptr || t->state != store::DeletionState::kLive || t->version != handover.version ||
      t->delivery != handover.delivery || t->handover_acked_version == handover.version) {
    return;  // changed since it was listed, or known already
  }
  t->handover_acked_version = handover.version;
  internal::ReconcilerLog().Info(
      "the agent applied the first step of a hand-over; sending the second",
      {{"resource", t->Key()}, {"step", std::string(store::DeliveryName(t->delivery))}});
  Enqueue(t->Key(), /*urgent=*/true);
}

// ---------------------------------------------------------------------------------------------
// Events from other threads

void Reconciler::OnDeletionConfirmed(const std::string& resource_id) {
  loop_.Post([this, resource_id] {
    TrackedResource* t = state_.Find(resource_id);
    if (t == nullptr) {
      if (!loader_.loaded()) {
        loader_.KeepConfirmation(resource_id);  // applied when the state is installed
      }
      return;
    }
    finisher_.OnConfirmed(*t);
  });
}

bool Reconciler::WaitingForDeletion(const std::string& resource_id) const {
  const TrackedResource* t = state_.Find(resource_id);
  return t != nullptr && t->state == store::DeletionState::kDeleteRequested;
}

void Reconciler::OnGoneFromMaestro(const std::string& resource_id) {
  TrackedResource* t = state_.Find(resource_id);
  if (t == nullptr || t->state != store::DeletionState::kDeleteRequested) {
    return;
  }
  if (t->busy) {
    // A change is being recorded for it (its recorded state would overwrite the confirmation):
    // asked again shortly.
    check_->Submit(resource_id);
    return;
  }
  internal::ReconcilerLog().Info(
      "Maestro no longer holds the resource (REST 404): deletion confirmed",
      {{"resource", t->Key()}, {"cluster", t->identity.cluster}});
  finisher_.OnConfirmed(*t);
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
