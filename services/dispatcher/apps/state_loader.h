// StateLoader: the reconciler's activation. It warm-loads the dispatch state and the outbox left
// by a previous run from the store (on the worker pool, retried with backoff until it succeeds),
// so a restarted dispatcher republishes nothing unchanged, and installs them on the loop.
//
// While that load runs (a minute for 300,000 rows on a busy hub), an Application the informer
// sees change is not held up by it: its own rows and pending outbox events are read
// (LoadApplications, up to batch_size keys per call), its older events go to the outbox first,
// and it is decided at once through `reconcile`. The installed state then skips what was
// tracked meanwhile (its state in memory is newer). Deletion confirmations that arrive before
// the state is installed are kept and applied to it.
//
// Thread safety: Start(), Deactivate() and the accessors may be called from any thread;
// everything else runs on the loop. Collaborators are borrowed and outlive it.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "libs/common/backoff.h"
#include "libs/common/clock.h"
#include "libs/common/loop.h"
#include "libs/store/dispatch_store.h"
#include "services/dispatcher/apps/app_events.h"
#include "services/dispatcher/apps/change_recorder.h"
#include "services/dispatcher/apps/dispatch_state.h"
#include "services/dispatcher/apps/metrics.h"
#include "services/dispatcher/apps/outbox.h"
#include "services/dispatcher/apps/outbox_gate.h"
#include "services/dispatcher/apps/pending_change.h"
#include "services/dispatcher/apps/reconciler_settings.h"

namespace mmi::dispatcher {

class StateLoader {
 public:
  struct Deps {
    Loop& loop;
    WorkerPool& workers;
    store::DispatchStore& store;
    const ObjectLister& apps;
    DispatchState& state;
    Outbox& outbox;
    ChangeRecorder& recorder;
    OutboxGate& gate;
    DispatcherMetrics& metrics;
    const Clock& clock;
    // Whether the ManagedCluster list is complete (an unknown cluster may be unlisted yet).
    std::function<bool()> clusters_synced;
    // Decides `key` into `batch`; false when its Application is absent (not final yet).
    std::function<bool(const std::string& key, std::vector<PendingChange>& batch)> reconcile;
    // Queues the key after `delay`.
    std::function<void(const std::string& key, std::chrono::milliseconds delay)> enqueue_after;
    // The state is installed (loaded() is true): every key is to be decided.
    std::function<void()> installed;
  };
  StateLoader(Deps deps, const ReconcilerSettings& settings);

  // Any thread. Starts the load (once).
  void Start();
  // Any thread. Stops deciding keys early; a load that ends installs nothing new to decide.
  void Deactivate() { deactivated_.store(true); }
  bool started() const { return started_.load(); }
  bool loaded() const { return loaded_.load(); }
  bool deactivated() const { return deactivated_.load(); }

  // Loop thread. `key` changed on the hub while the state loads: decide it from its own rows.
  void EnqueueEarly(const std::string& key);
  // Loop thread. True when `key` was decided before the load (so a retry is not held up either).
  bool FetchedEarly(const std::string& key) const { return early_fetched_.contains(key); }
  // Loop thread. Decides the keys whose rows were read, as far as a batch slot and the outbox
  // allow (ChangeRecorder and OutboxGate call back).
  void DecideEarly();
  // Loop thread. The agent confirmed the deletion of `resource_id`, not tracked yet: applied
  // to the state once it is read.
  void KeepConfirmation(const std::string& resource_id) {
    early_confirmations_.insert(resource_id);
  }

 private:
  struct Loaded {
    std::vector<store::DispatchedResource> resources;
    std::vector<store::OutboxEntry> outbox;
  };
  // Worker pool: reads every row and the pending outbox.
  void Load();
  absl::Status ReadOutbox(std::vector<store::OutboxEntry>& outbox);
  void Install(Loaded loaded);
  // Tracks the loaded rows and keeps only the outbox events of what was not tracked early.
  void TrackLoaded(Loaded& loaded, const absl::flat_hash_set<std::string>& early);
  // Delete requests published before the restart and still unconfirmed: their resend clock
  // starts now.
  void StartResendClocks(const absl::flat_hash_set<std::string>& early);
  // Reads the rows and pending events of up to batch_size wanted keys (one call at a time).
  void EarlyFetch();
  void OnEarlyFetched(std::vector<std::string> keys, absl::StatusOr<store::ApplicationRows> rows);
  bool Stopped() const { return loaded_.load() || deactivated_.load(); }

  Deps deps_;
  const ReconcilerSettings& settings_;
  std::atomic<bool> started_{false};
  std::atomic<bool> loaded_{false};
  std::atomic<bool> deactivated_{false};
  Backoff load_backoff_;
  Backoff early_backoff_;

  // Loop-owned. Confirmations that arrived before the state was installed (the listener runs
  // from the start; Load() may have read the row just before the status sink confirmed it).
  absl::flat_hash_set<std::string> early_confirmations_;
  // Before the state is installed: keys changed on the hub whose rows are to be read, keys whose
  // rows are tracked (decided afresh on their next change without reading them again), and keys
  // ready to be decided.
  absl::flat_hash_set<std::string> early_wanted_;
  absl::flat_hash_set<std::string> early_fetched_;
  absl::flat_hash_set<std::string> early_ready_;
  bool early_fetching_ = false;
  bool early_wait_posted_ = false;  // DecideEarly() waits for the ManagedCluster list
};

}  // namespace mmi::dispatcher
