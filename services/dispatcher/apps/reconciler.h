// Reconciler: turns every pull-model Application on the hub into what its managed cluster needs
// (hub-apis.md §5, maestro-protocol.md §6), and keeps the dispatch state.
//
//   informer handlers --keys--> bounded, de-duplicating queue --> reconcile loop (one thread)
//   reconcile loop: Decide() (decision.h, pure) --> Apply() (reconciler_apply.cc, the I/O)
//   Apply --Record(batch)--> worker pool (PostgreSQL) --seqs--> Outbox --> Publisher
//   Publisher ack --> loop: strip `operation`/refresh from the hub Application (worker pool)
//   hub deletionTimestamp --> delete request recorded + published, state kDeleteRequested
//   status sink confirms (NOTIFY) --> loop: release the finalizer, Forget the row (worker pool)
//
// The decisions themselves are listed in decision.h.
//
// Memory: once ReconcilerSettings::max_outbox outbox events wait for the broker or are in flight
// (not those in retry backoff), no new keys are taken until the outbox, which wakes the loop,
// is down to half (OutboxFull).
//
// State: one loop thread owns the dispatch state (dispatch_state.h). It is warm-loaded from the
// store on Activate(), so a restarted dispatcher republishes nothing unchanged. While that load
// runs (a minute for 300,000 rows on a busy hub), an Application the informer sees change is not
// held up by it: its own rows and pending outbox events are read (LoadApplications, a few hundred
// keys per call), its older events go to the outbox first, and it is decided at once; the warm
// load then installs every other resource and skips those (their state in memory is newer). No
// key is
// decided before the ManagedCluster cache has synced. While the Application list is still read
// (minutes for 300,000 after a restart; the informer hands out the watch's changes meanwhile),
// keys whose Application is cached are decided at once, so new and changed Applications are
// never held up by a relist; a key whose Application is absent waits for the complete list
// (as does the sweep of deletions confirmed while we were down): a resource known from the store
// whose Application is not cached *yet* must not be taken for a vanished one (that would publish a
// delete for every live resource on a restart). Store calls and hub writes run on the worker
// pool.
//
// Thread safety: Enqueue(), OnClusterAdded(), OnDeletionConfirmed(), Activate(), Deactivate()
// and the accessors marked "any thread" may be called from any thread; everything else runs on
// the loop.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "libs/common/backoff.h"
#include "libs/common/clock.h"
#include "libs/common/loop.h"
#include "libs/kube/kube_client.h"
#include "libs/kube/work_queue.h"
#include "libs/store/dispatch_store.h"
#include "services/dispatcher/apps/app_events.h"
#include "services/dispatcher/apps/decision.h"
#include "services/dispatcher/apps/dispatch_state.h"
#include "services/dispatcher/apps/hub_writes.h"
#include "services/dispatcher/apps/managed_clusters.h"
#include "services/dispatcher/apps/metrics.h"
#include "services/dispatcher/apps/outbox.h"
#include "services/dispatcher/apps/payload.h"
#include "services/dispatcher/apps/reconciler_settings.h"
#include "services/dispatcher/apps/spec_events.h"
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
  // Any thread. True from the moment a deletion of `resource_id` is decided (before it is even
  // recorded), and after it finished until the resource is dispatched afresh (10 min at least):
  // the spec resync responder must not send its spec any more.
  bool IsDeleting(const std::string& resource_id) const;

  // Any thread.
  bool loaded() const { return loaded_.load(); }
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
  // One change for the store: the new row and its outbox event.
  struct PendingChange {
    store::DispatchChange change;
    // change.event.event decoded: the outbox publishes it without decoding the text again.
    std::optional<cloudevents::Event> event;
    bool created_entry = false;
    std::optional<PropagatedRequest> strip;
  };
  struct Loaded {
    std::vector<store::DispatchedResource> resources;
    std::vector<store::OutboxEntry> outbox;
  };

  // --- activation and warm load (reconciler.cc) ---
  void LoadState();
  void InstallState(Loaded loaded);
  // A key the informer saw change while the state loads: decided from its own rows (EarlyFetch)
  // without waiting for the whole state. Loop thread, like the three below.
  void EnqueueEarly(const std::string& key);
  // Reads the rows and pending events of up to settings.batch_size wanted keys (one call at a
  // time), then OnEarlyFetched() tracks them and decides the keys.
  void EarlyFetch();
  void OnEarlyFetched(std::vector<std::string> keys, absl::StatusOr<store::ApplicationRows> rows);
  void DecideEarly();
  // Both hub caches hold their complete initial lists.
  bool CachesSynced() const;
  // Checks every 200 ms until both caches synced, processing the queue meanwhile (decisions on
  // cached Applications may start once the clusters synced); then sweeps confirmed deletions,
  // enqueues every key if any was deferred (absent before the Application list was complete)
  // and processes the queue. One chain.
  void WaitForSync();
  // Finishes the deletions found confirmed in the store (once, when the caches synced).
  void SweepConfirmedDeletions();

  // --- key queue and store round trips (reconciler.cc) ---
  void ScheduleProcess();
  void ProcessKeys();
  // True while the outbox holds settings_.max_outbox events ready or in flight, and then until
  // it is down to half: the outbox calls OnOutboxDrained() then (no polling).
  bool OutboxFull();
  void OnOutboxDrained();
  void EnqueueAfter(const std::string& key, std::chrono::milliseconds delay);
  void EnqueueAll();
  void FlushBatch(std::vector<PendingChange> batch);
  void OnRecorded(std::vector<PendingChange> batch, absl::StatusOr<std::vector<int64_t>> seqs);
  // The store refused `batch`: undo what was decided for it and decide its keys again later.
  void OnRecordFailed(const std::vector<PendingChange>& batch, const absl::Status& error);
  void OnPublished(const store::OutboxEntry& entry);

  // --- decisions applied (reconciler_apply.cc) ---
  // Decide() for `key`, then Apply(). False (nothing decided) when its Application is absent
  // and `absence_is_final` is not (the Application list is not complete yet).
  bool Reconcile(const std::string& key, bool absence_is_final, std::vector<PendingChange>& batch);
  void Apply(const std::string& key, const nlohmann::json* app, TrackedResource* t,
             const Decision& d, std::vector<PendingChange>& batch);
  void PublishSpec(const std::string& key, const nlohmann::json& app, const Decision& d,
                   std::vector<PendingChange>& batch);
  void RequestDelete(TrackedResource& t, cloudevents::Timestamp deletion_time,
                     std::vector<PendingChange>& batch);
  void FinishDeletion(TrackedResource& t);
  void SubmitStrip(TrackedResource& t, PropagatedRequest request);
  void SubmitReleaseUntracked(const std::string& ns, const std::string& name);
  cloudevents::Timestamp Now() const;

  Loop& loop_;
  WorkerPool& workers_;
  store::DispatchStore& store_;
  kube::KubeClient& hub_;
  const ObjectLister& apps_;
  const ManagedClusterTracker& clusters_;
  Outbox& outbox_;
  DispatcherMetrics& metrics_;
  const Clock& clock_;
  const ReconcilerSettings settings_;

  std::atomic<bool> active_{false};
  std::atomic<bool> loaded_{false};
  std::atomic<bool> activating_{false};
  std::atomic<bool> deactivated_{false};
  std::atomic<int> inflight_batches_{0};

  // Application keys waiting for the loop (capacity: settings.queue_capacity).
  kube::WorkQueue queue_;
  // A ProcessKeys() is posted and has not started yet.
  std::atomic<bool> process_posted_{false};

  // Loop-owned (the deleting marks in state_ excepted).
  DispatchState state_;
  UnknownClusters unknown_;
  bool swept_ = false;  // SweepConfirmedDeletions() ran: confirmations are finished at once
  bool sync_wait_posted_ = false;       // a WaitForSync() check is pending
  bool deferred_until_synced_ = false;  // keys were put aside until the Application list is in
  bool outbox_paused_ = false;          // OutboxFull(): no new keys until OnOutboxDrained()
  std::chrono::steady_clock::time_point outbox_paused_at_;
  // Confirmations that arrived before the state was installed (the listener runs from the start;
  // LoadState() may have read the row just before the status sink confirmed it).
  absl::flat_hash_set<std::string> early_confirmations_;
  // Before the state is installed: keys changed on the hub whose rows are to be read, keys whose
  // rows are tracked (decided afresh on their next change without reading them again), and keys
  // ready to be decided.
  absl::flat_hash_set<std::string> early_wanted_;
  absl::flat_hash_set<std::string> early_fetched_;
  absl::flat_hash_set<std::string> early_ready_;
  bool early_fetching_ = false;
  bool early_wait_posted_ = false;  // DecideEarly() waits for the ManagedCluster list
  Backoff retry_backoff_;
  Backoff load_backoff_;
  Backoff early_backoff_;
};

}  // namespace mmi::dispatcher
