// DeletionFinisher: the end of a deletion, once the agent confirmed it (hub-apis.md §5.8):
// releases the Application's resources finalizer when it is being deleted, forgets the store row
// and the tracked resource, and remembers the id as recently deleted (the spec resync must not
// send it). Also releases the finalizer of a deleted Application that was never dispatched.
// Confirmations that arrive before both hub caches synced wait for Sweep(), which finishes every
// deletion found confirmed.
//
// The hub write and the store call run on the worker pool; their outcome comes back to the
// reconcile loop. Failures are retried through `retry_after`.
//
// Thread safety: loop thread only. All collaborators are borrowed and outlive it.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <utility>

#include "libs/common/backoff.h"
#include "libs/common/clock.h"
#include "libs/common/loop.h"
#include "libs/kube/kube_client.h"
#include "libs/store/dispatch_store.h"
#include "services/dispatcher/apps/app_events.h"
#include "services/dispatcher/apps/dispatch_state.h"
#include "services/dispatcher/apps/metrics.h"

namespace mmi::dispatcher {

class DeletionFinisher {
 public:
  struct Deps {
    Loop& loop;
    WorkerPool& workers;
    store::DispatchStore& store;
    kube::KubeClient& hub;
    const ObjectLister& apps;
    DispatchState& state;
    DispatcherMetrics& metrics;
    const Clock& clock;
    Backoff& retry;  // shared with the reconciler's other retries
    // Queues a key for the reconcile loop, now or after `delay`.
    std::function<void(const std::string& key)> enqueue;
    std::function<void(const std::string& key, std::chrono::milliseconds delay)> retry_after;
  };
  explicit DeletionFinisher(Deps deps) : deps_(std::move(deps)) {}

  // The status sink recorded the agent's Deleted confirmation for the tracked `t`: finished at
  // once when the caches synced (Sweep() ran) and nothing runs for it, else later.
  void OnConfirmed(TrackedResource& t);
  // Finishes every deletion found confirmed (once, when both hub caches synced).
  void Sweep();
  bool swept() const { return swept_; }

  // Releases the finalizer (when the Application is being deleted) and forgets `t`.
  void Finish(TrackedResource& t);
  // Releases the finalizer of the Application `ns/name`, which has no tracked resource.
  void ReleaseUntracked(const std::string& ns, const std::string& name);

 private:
  void OnFinished(const std::string& id, const std::string& key, bool release, bool released,
                  const absl::Status& status);

  Deps deps_;
  bool swept_ = false;
};

}  // namespace mmi::dispatcher
