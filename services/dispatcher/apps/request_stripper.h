// RequestStripper: removes the `operation` and refresh annotation a hub Application carried to
// its spoke once the broker accepted the event that carried them (hub_writes.h: StripRequest,
// guarded by the values sent). The write runs on the worker pool; its outcome comes back to the
// reconcile loop, which retries failures through `retry_after`.
//
// Thread safety: loop thread only. All collaborators are borrowed and outlive it.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <utility>

#include "libs/common/backoff.h"
#include "libs/common/loop.h"
#include "libs/kube/kube_client.h"
#include "services/dispatcher/apps/dispatch_state.h"
#include "services/dispatcher/apps/metrics.h"
#include "services/dispatcher/apps/propagated_request.h"

namespace mmi::dispatcher {

class RequestStripper {
 public:
  struct Deps {
    Loop& loop;
    WorkerPool& workers;
    kube::KubeClient& hub;
    DispatchState& state;
    DispatcherMetrics& metrics;
    Backoff& retry;  // shared with the reconciler's other retries
    // Queues the key again after `delay` (the strip is decided again).
    std::function<void(const std::string& key, std::chrono::milliseconds delay)> retry_after;
  };
  explicit RequestStripper(Deps deps) : deps_(std::move(deps)) {}

  // Removes `request` from the hub Application of `t` (nothing when empty); `t.stripping` is
  // true until the write's outcome is back on the loop.
  void Submit(TrackedResource& t, PropagatedRequest request);

 private:
  void OnStripped(const std::string& id, const std::string& key, const absl::Status& status);

  Deps deps_;
};

}  // namespace mmi::dispatcher
