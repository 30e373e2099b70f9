// Reconciler: decides, for every pull-model Application on the hub, what to send to its managed
// cluster (hub-apis.md §5, maestro-protocol.md §6), and keeps the dispatch state.
//
//   informer handlers --keys--> bounded, de-duplicating queue --> reconcile loop (one thread)
//   reconcile loop --Record(batch)--> worker pool (PostgreSQL) --seqs--> Outbox --> Publisher
//   Publisher ack --> loop: strip `operation`/refresh from the hub Application (worker pool)
//   hub deletionTimestamp --> delete request recorded + published, state kDeleteRequested
//   status sink confirms (NOTIFY) --> loop: release the finalizer, Forget the row (worker pool)
//
// Decisions (per Application key "<namespace>/<name>"):
//  * not pull model (label + cluster annotation, hub-apis §5.2): ignored;
//  * target ManagedCluster is the hub itself (local-cluster by name or label): skipped;
//  * target ManagedCluster unknown: parked, reported (core/v1 Event + metric), retried when the
//    cluster appears and periodically;
//  * payload hash equal to the last recorded one: nothing is sent (status writes and other
//    bookkeeping do not change it); otherwise a create (first time) or update is recorded in the
//    store together with its outbox event, then published;
//  * deletionTimestamp, or the Application vanished: a delete request; the finalizer
//    `resources-finalizer.argocd.argoproj.io` is released only after the agent confirmed.
//
// State: one loop thread owns the in-memory dispatch state (resource id -> payload hash,
// version, deletion state). It is warm-loaded from the store on Activate(), so a restarted
// dispatcher republishes nothing unchanged. No key is decided (and no confirmed deletion is
// finished) before both the Application and the ManagedCluster caches have synced: a resource
// known from the store whose Application is not cached *yet* must not be taken for a vanished
// one (that would publish a delete for every live resource on a restart). Store calls and hub
// writes run on the worker pool.
//
// Thread safety: Enqueue(), OnClusterAdded(), OnDeletionConfirmed(), Activate(), Deactivate()
// and the accessors marked "any thread" may be called from any thread; everything else runs on
// the loop.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "libs/common/backoff.h"
#include "libs/common/clock.h"
#include "libs/common/loop.h"
#include "libs/kube/informer.h"
#include "libs/kube/kube_client.h"
#include "libs/kube/work_queue.h"
#include "libs/store/dispatch_store.h"
#include "services/dispatcher/hub_writes.h"
#include "services/dispatcher/managed_clusters.h"
#include "services/dispatcher/metrics.h"
#include "services/dispatcher/outbox.h"
#include "services/dispatcher/payload.h"
#include "services/dispatcher/spec_events.h"

namespace mmi::dispatcher {

// Read access to cached hub objects (an Informer in production, a map in tests). Thread-safe.
class ObjectLister {
 public:
  virtual ~ObjectLister() = default;
  // nullptr when absent.
  virtual kube::ObjectPtr Get(std::string_view ns, std::string_view name) const = 0;
  virtual std::vector<kube::ObjectPtr> List() const = 0;
  // True once the cache holds the complete initial list. Before that an absent object proves
  // nothing (it may simply not be listed yet), so nothing may be decided from Get() == nullptr.
  virtual bool synced() const = 0;
};

class InformerLister final : public ObjectLister {
 public:
  explicit InformerLister(const kube::Informer& informer) : informer_(informer) {}
  kube::ObjectPtr Get(std::string_view ns, std::string_view name) const override {
    return informer_.Get(ns, name);
  }
  std::vector<kube::ObjectPtr> List() const override { return informer_.List(); }
  bool synced() const override { return informer_.HasSynced(); }

 private:
  const kube::Informer& informer_;
};

struct ReconcilerSettings {
  PayloadSettings payload;
  VersionMode version_mode = VersionMode::kCounter;
  // Keys waiting for the loop at most; beyond, intake pauses and a full resync follows.
  size_t queue_capacity = 500'000;
  // Keys reconciled per loop turn; their changes go to the store in one transaction.
  size_t batch_size = 200;
  // Record() transactions running at once at most.
  int max_inflight_batches = 2;
  // Skip Applications whose target is the hub's own ManagedCluster (local-cluster).
  bool skip_local_cluster = true;
  // Parked Applications (unknown ManagedCluster) are retried this often.
  std::chrono::milliseconds unknown_cluster_retry{60'000};
  // At most one Kubernetes Event per parked Application per interval.
  std::chrono::milliseconds unknown_cluster_event_interval{600'000};
  // A delete request the agent has not confirmed this long after the broker accepted it is
  // published again (the wait doubles per resend, up to 16x): its Deleted report may have been
  // lost (a status sink killed while holding it, an agent offline when the request came).
  // Agents and Maestro treat a repeated delete as done (Maestro: NotFound, also done).
  std::chrono::milliseconds delete_resend_after{60'000};
  // Retries of failed store calls and hub writes.
  BackoffSettings retry{.initial = std::chrono::milliseconds(500),
                        .max = std::chrono::milliseconds(60'000),
                        .multiplier = 2.0,
                        .jitter = 0.2};
  // Outbox rows read per page when recovering after a restart.
  int outbox_recover_page = 1000;
  // Reporting component/instance of the Events written on hub Applications.
  std::string event_component = "mmi-dispatcher";
  std::string event_instance;
};

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

  // Any thread. Queues an Application key ("<namespace>/<name>") for the loop.
  void Enqueue(const std::string& key);
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
  size_t TrackedForTest() const { return resources_.size(); }
  bool ParkedForTest(const std::string& key) const { return parked_.contains(key); }

 private:
  struct Tracked {
    std::string resource_id;
    std::string cluster;
    std::string hub_namespace;
    std::string hub_name;
    std::string hub_uid;
    std::string work_name;
    std::optional<std::string> appset_namespace;
    std::optional<std::string> appset_name;
    std::string payload_hash;
    int32_t version = 0;
    store::DeletionState state = store::DeletionState::kLive;
    bool busy = false;       // a store call or hub write for it is running
    bool requeue = false;    // reconcile its key again when not busy any more
    int unpublished = 0;     // outbox events recorded but not yet accepted by the broker
    bool stripping = false;  // a strip of operation/refresh is running
    std::optional<PropagatedRequest> strip;  // strip once `strip_hash` is published
    std::string strip_hash;
    // When the broker last accepted a delete request for it, and how often it was sent again.
    std::optional<std::chrono::steady_clock::time_point> delete_published_at;
    int delete_resends = 0;
    std::string Key() const { return hub_namespace + "/" + hub_name; }
  };
  struct PendingChange {
    store::DispatchChange change;
    bool created_entry = false;
    std::optional<PropagatedRequest> strip;
  };
  struct Parked {
    std::string cluster;
    std::optional<std::chrono::steady_clock::time_point> last_event;
  };
  struct Loaded {
    std::vector<store::DispatchedResource> resources;
    std::vector<store::OutboxEntry> outbox;
  };

  void LoadState();
  void InstallState(Loaded loaded);
  // Both hub caches hold their complete initial lists.
  bool CachesSynced() const;
  // Finishes the deletions found confirmed in the store (once, when the caches synced).
  void SweepConfirmedDeletions();
  void ScheduleProcess();
  void ProcessKeys();
  void Reconcile(const std::string& key, std::vector<PendingChange>& batch);
  void FlushBatch(std::vector<PendingChange> batch);
  void OnRecorded(std::vector<PendingChange> batch, absl::StatusOr<std::vector<int64_t>> seqs);
  void OnPublished(const store::OutboxEntry& entry);
  void RequestDelete(Tracked& t, cloudevents::Timestamp deletion_time,
                     std::vector<PendingChange>& batch);
  void FinishDeletion(Tracked& t);
  // kDeleteRequested and unconfirmed past its resend delay: publish the delete request again.
  // True when it did.
  bool ResendDeleteIfDue(Tracked& t, std::vector<PendingChange>& batch);
  std::chrono::milliseconds DeleteResendDelay(int resends) const;
  void SubmitStrip(Tracked& t, PropagatedRequest request);
  void SubmitReleaseUntracked(const std::string& ns, const std::string& name);
  void Park(const std::string& key, const std::string& cluster, const nlohmann::json& app);
  void Unpark(const std::string& key);
  void RetryParked();
  void EnqueueAfter(const std::string& key, std::chrono::milliseconds delay);
  void EnqueueAll();
  Tracked* FindByKey(const std::string& key);
  void Untrack(const std::string& resource_id);
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
  std::atomic<int> inflight_batches_{0};

  // Application keys waiting for the loop (capacity: settings.queue_capacity).
  kube::WorkQueue queue_;
  // A ProcessKeys() is posted and has not started yet.
  std::atomic<bool> process_posted_{false};

  // Loop-owned.
  absl::flat_hash_map<std::string, Tracked> resources_;   // by resource id
  absl::flat_hash_map<std::string, std::string> by_key_;  // "<ns>/<name>" -> resource id
  absl::flat_hash_map<std::string, Parked> parked_;       // by key
  bool parked_retry_armed_ = false;
  bool swept_ = false;  // SweepConfirmedDeletions() ran: confirmations are finished at once
  // Confirmations that arrived before the state was installed (the listener runs from the start;
  // LoadState() may have read the row just before the status sink confirmed it).
  absl::flat_hash_set<std::string> early_confirmations_;
  mutable absl::Mutex deleting_mu_;
  absl::flat_hash_set<std::string> deleting_ ABSL_GUARDED_BY(deleting_mu_);
  // Finished deletions, by when: IsDeleting() stays true for them until they are dispatched
  // afresh (pruned after 10 min once over 1,024).
  absl::flat_hash_map<std::string, std::chrono::steady_clock::time_point> recently_deleted_
      ABSL_GUARDED_BY(deleting_mu_);
  Backoff retry_backoff_;
  Backoff load_backoff_;
  uint64_t event_counter_ = 0;
};

// Feeds an Application informer into a Reconciler: adds, deletes and updates that change what is
// dispatched (not status-only updates, hub-apis §5.2) enqueue the key. Runs on the informer
// thread; only enqueues.
class AppEventHandler final : public kube::InformerHandler {
 public:
  explicit AppEventHandler(Reconciler& reconciler) : reconciler_(reconciler) {}
  void OnAdd(const kube::ObjectPtr& object, bool in_initial_list) override;
  void OnUpdate(const kube::ObjectPtr& old_object, const kube::ObjectPtr& new_object) override;
  void OnDelete(const kube::ObjectPtr& last_state) override;

 private:
  Reconciler& reconciler_;
};

// True when the two versions of an Application differ in more than status and server
// bookkeeping (resourceVersion, generation, managedFields).
bool DispatchRelevantChange(const nlohmann::json& old_app, const nlohmann::json& new_app);

// The informer transform for Applications: drops status and managedFields.
kube::Transform ApplicationTransform();

}  // namespace mmi::dispatcher
