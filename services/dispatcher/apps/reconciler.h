// Reconciler: turns every pull-model Application on the hub into what its managed cluster needs
// (hub-apis.md §5, maestro-protocol.md §6), and keeps the dispatch state.
//
//   informer handlers --keys--> bounded, de-duplicating queue --> reconcile loop (one thread)
//   reconcile loop: Decide() (decision.h, pure) --> DecisionApplier (decision_applier.h)
//   ChangeRecorder --Record(batch)--> worker pool (PostgreSQL) --seqs--> Outbox --> Publisher
//   Publisher ack --> loop: RequestStripper strips `operation`/refresh from the hub Application
//   hub deletionTimestamp --> delete request recorded + published, state kDeleteRequested
//   status sink confirms (NOTIFY) --> loop: DeletionFinisher releases the finalizer, forgets
//
// The decisions themselves are listed in decision.h. The Reconciler owns the key queue and the
// loop's turn (ProcessKeys) and wires its collaborators, each in its own header:
//   StateLoader       activation: warm load, keys decided from their own rows while it runs
//   DecisionApplier   a Decision carried out: store batch, hub writes, parking
//   ChangeRecorder    batches recorded in the store, their events followed through the outbox
//   OutboxGate        no new keys while the outbox is full
//   DeletionFinisher  confirmed deletions finished (finalizer released, row forgotten)
//   RequestStripper   propagated operation/refresh removed from the hub once published
//   UnknownClusters   Applications parked for an unknown ManagedCluster
//
// Memory: once ReconcilerSettings::max_outbox outbox events wait for the broker or are in flight
// (not those in retry backoff), no new keys are taken until the outbox, which wakes the loop,
// is down to half (OutboxGate).
//
// State: one loop thread owns the dispatch state (dispatch_state.h). It is warm-loaded from the
// store on Activate(), so a restarted dispatcher republishes nothing unchanged. While that load
// runs (a minute for 300,000 rows on a busy hub), an Application the informer sees change is not
// held up by it (StateLoader): its own rows and pending outbox events are read, its older events
// go to the outbox first, and it is decided at once; the warm load then installs every other
// resource and skips those (their state in memory is newer). No key is decided before the
// ManagedCluster cache has synced. While the Application list is still read (minutes for 300,000
// after a restart; the informer hands out the watch's changes meanwhile), keys whose Application is
// cached are decided at once, so new and changed Applications are never held up by a relist; a key
// whose Application is absent waits for the complete list (as does the sweep of deletions confirmed
// while we were down): a resource known from the store whose Application is not cached *yet* must
// not be taken for a vanished one (that would publish a delete for every live resource on a
// restart). Store calls and hub writes run on the worker pool.
//
// Thread safety: Enqueue(), OnClusterAdded(), OnDeletionConfirmed(), Activate(), Deactivate()
// and the accessors marked "any thread" may be called from any thread; everything else runs on
// the loop.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "libs/common/backoff.h"
#include "libs/common/clock.h"
#include "libs/common/loop.h"
#include "libs/kube/kube_client.h"
#include "libs/kube/work_queue.h"
#include "libs/store/dispatch_store.h"
#include "services/dispatcher/apps/ack_check.h"
#include "services/dispatcher/apps/app_events.h"
#include "services/dispatcher/apps/change_recorder.h"
#include "services/dispatcher/apps/decision_applier.h"
#include "services/dispatcher/apps/deletion_check.h"
#include "services/dispatcher/apps/deletion_finisher.h"
#include "services/dispatcher/apps/dispatch_state.h"
#include "services/dispatcher/apps/managed_clusters.h"
#include "services/dispatcher/apps/manifest_delivery.h"
#include "services/dispatcher/apps/manifest_writes.h"
#include "services/dispatcher/apps/metrics.h"
#include "services/dispatcher/apps/outbox.h"
#include "services/dispatcher/apps/outbox_gate.h"
#include "services/dispatcher/apps/pending_change.h"
#include "services/dispatcher/apps/reconciler_settings.h"
#include "services/dispatcher/apps/request_stripper.h"
#include "services/dispatcher/apps/state_loader.h"
#include "services/dispatcher/apps/unknown_clusters.h"

namespace mmi::dispatcher {

// Borrowed collaborators; all must outlive the reconciler.
struct ReconcilerDeps {
  Loop& loop;
  WorkerPool& workers;
  store::DispatchStore& store;
  kube::KubeClient& hub;
  const ObjectLister& apps;
  const ManagedClusterTracker& clusters;
  Outbox& outbox;
  DispatcherMetrics& metrics;
  const Clock& clock;
  // Over gRPC with Maestro's REST API configured: whether Maestro still holds a resource
  // (DeletionCheck::Lookup, run on the worker pool). Empty: unconfirmed deletions wait for the
  // status sink's Deleted only.
  DeletionCheck::Lookup resource_exists = nullptr;
  // Manifest delivery (ADR 0007; services/dispatcher/manifests). Null: every Application is
  // delivered as an Application (builds without Argo CD's repo-server client).
  ManifestDelivery* manifests = nullptr;
};

class Reconciler {
 public:
  Reconciler(ReconcilerDeps deps, ReconcilerSettings settings);
  Reconciler(const Reconciler&) = delete;
  Reconciler& operator=(const Reconciler&) = delete;

  // Any thread. Loads the dispatch state and the outbox left by a previous run (on the worker
  // pool, retried until it succeeds), then starts deciding: every cached Application and every
  // known resource is reconciled, confirmed deletions are finished.
  void Activate();
  // Any thread. Stops taking keys (shutdown); decisions already handed to the store complete.
  void Deactivate();

  // Any thread. Queues an Application key ("<namespace>/<name>") for the loop. `urgent`: a
  // change the informer saw; it is decided before keys queued by a list or a resync.
  void Enqueue(const std::string& key, bool urgent = false);
  // Any thread. A ManagedCluster appeared: retry the Applications parked for it.
  void OnClusterAdded(const std::string& cluster);
  // Any thread. The status sink recorded the agent's Deleted confirmation for `resource_id`.
  void OnDeletionConfirmed(const std::string& resource_id);
  // Loop thread (or a test with idle executors). Deletions waiting for their REST look-up.
  size_t DeletionChecksQueuedForTest() const { return check_ ? check_->queued() : 0; }
  // Any thread. True from the moment a deletion of `resource_id` is decided (before it is even
  // recorded), and after it finished until the resource is dispatched afresh (10 min at least):
  // the spec resync responder must not send its spec any more.
  bool IsDeleting(const std::string& resource_id) const;

  // Any thread.
  bool loaded() const { return loader_.loaded(); }
  bool active() const { return active_.load(); }
  size_t queue_depth() const;
  // True while keys are queued or Record() transactions are running.
  bool busy() const;

  // Loop thread (or a test with idle executors).
  struct ResourceView {
    std::string key;
    std::string cluster;
    std::string payload_hash;
    int32_t version = 0;
    store::DeletionState state = store::DeletionState::kLive;
    int unpublished = 0;
  };
  std::optional<ResourceView> ResourceForTest(const std::string& resource_id) const;
  size_t TrackedForTest() const { return state_.size(); }
  bool ParkedForTest(const std::string& key) const { return unknown_.Contains(key); }

 private:
  // Wiring: the collaborators' dependencies and the callbacks into the loop they are given.
  std::function<void(const std::string&)> EnqueueFn();
  std::function<void(const std::string&, std::chrono::milliseconds)> EnqueueAfterFn();
  DeletionFinisher::Deps FinisherDeps(const ReconcilerDeps& deps);
  ChangeRecorder::Deps RecorderDeps(const ReconcilerDeps& deps);
  StateLoader::Deps LoaderDeps(const ReconcilerDeps& deps);

  // Loop thread.
  // Both hub caches hold their complete initial lists.
  bool CachesSynced() const;
  // Checks every 200 ms until both caches synced, processing the queue meanwhile (decisions on
  // cached Applications may start once the clusters synced); then sweeps confirmed deletions,
  // enqueues every key if any was deferred (absent before the Application list was complete)
  // and processes the queue. One chain.
  void WaitForSync();
  void ScheduleProcess();
  void ProcessKeys();
  void EnqueueAfter(const std::string& key, std::chrono::milliseconds delay);
  void EnqueueAll();
  // A key changed again while its change was recorded: queued, and decided early while the
  // state loads.
  void Requeue(const std::string& key);
  // The state is installed: every key is decided.
  void OnInstalled();
  // A batch slot is free again or the outbox gate opened: go on with the queue and the keys
  // decided before the load.
  void OnSlotFreed(bool failed);
  // Decide() for `key`, then DecisionApplier::Apply(). False (nothing decided) when its
  // Application is absent and `absence_is_final` is not (the Application list is not complete).
  bool Reconcile(const std::string& key, bool absence_is_final, std::vector<PendingChange>& batch);
  // What manifest delivery prepares for Decide(): the bundle to decide on (unset: the
  // Application, which Decide() builds), its `manifest_renders` row, and how it delivers the
  // Application (a hand-over's step included, handover.h).
  struct PreparedDelivery {
    std::optional<Dispatch> dispatch;
    std::optional<store::ManifestRender> render;
    store::Delivery delivery = store::Delivery::kApplication;
  };
  // Manifest delivery's part of Reconcile() for a live pull-model Application: false when the
  // plan settles the key without a decision (refused, pending, no bundle yet); else `prepared`
  // is what to decide on, with the step of a hand-over between the modes where one is under way.
  bool PlanManifests(const std::string& key, const nlohmann::json& app, const TrackedResource* t,
                     PreparedDelivery& prepared);
  // The next step for `app`, rendered as `plan` (kRendered with a bundle), given what was
  // recorded for it (handover.h).
  void PlanHandover(const std::string& key, const nlohmann::json& app, const TrackedResource* t,
                    std::optional<store::Delivery> recorded, ManifestPlan plan,
                    PreparedDelivery& prepared);
  // AckCheck found the first step of a hand-over acknowledged: its key is decided again.
  void OnHandoverAcked(const store::AcknowledgedHandover& handover);
  // Maestro's REST API answered 404 for `resource_id`, whose deletion waits for its
  // confirmation: finished as on the status sink's Deleted.
  void OnGoneFromMaestro(const std::string& resource_id);
  bool WaitingForDeletion(const std::string& resource_id) const;
  // AckCheck listed `resource` as unacknowledged: marks it for a republish and queues its key,
  // unless it changed since it was listed, is busy or waits out its republish backoff.
  bool RepublishUnacknowledged(const store::UnacknowledgedResource& resource);

  Loop& loop_;
  const ObjectLister& apps_;
  const ManagedClusterTracker& clusters_;
  DispatcherMetrics& metrics_;
  const Clock& clock_;
  const ReconcilerSettings settings_;

  std::atomic<bool> active_{false};

  // Application keys waiting for the loop (capacity: settings.queue_capacity).
  kube::WorkQueue queue_;
  // A ProcessKeys() is posted and has not started yet.
  std::atomic<bool> process_posted_{false};

  // Loop-owned (the deleting marks in state_ excepted).
  DispatchState state_;
  bool sync_wait_posted_ = false;       // a WaitForSync() check is pending
  bool deferred_until_synced_ = false;  // keys were put aside until the Application list is in
  // Store calls and hub writes that failed are retried with this one backoff (reset by a
  // recorded batch).
  Backoff retry_backoff_;

  // Collaborators, in construction order (each may use those above it).
  UnknownClusters unknown_;
  RequestStripper stripper_;
  DeletionFinisher finisher_;
  // Over gRPC with maestroRest.url: REST look-ups at each delete resend; else null.
  std::unique_ptr<DeletionCheck> check_;
  OutboxGate gate_;
  ChangeRecorder recorder_;
  DecisionApplier applier_;
  StateLoader loader_;
  ManifestDelivery* const manifests_;  // null: no manifest delivery
  ManifestWrites manifest_writes_;
  // dispatch.ackCheck.enabled: the end-to-end acknowledgement; else null.
  std::unique_ptr<AckCheck> ack_check_;
};

}  // namespace mmi::dispatcher
