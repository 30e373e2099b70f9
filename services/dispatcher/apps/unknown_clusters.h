// UnknownClusters: the Applications parked because their target ManagedCluster does not exist
// (yet). Each is reported once (log, mmi_dispatcher_unknown_cluster_total) and with a Warning
// Event `UnknownManagedCluster` on the Application at most once per event interval; all are
// retried every `unknown_cluster_retry`, and at once when their cluster appears.
//
// Thread safety: the reconcile loop owns it; the Event is written on the worker pool.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "libs/common/clock.h"
#include "libs/common/loop.h"
#include "libs/kube/kube_client.h"
#include "nlohmann/json.hpp"
#include "services/dispatcher/apps/metrics.h"
#include "services/dispatcher/apps/reconciler_settings.h"

namespace mmi::dispatcher {

class UnknownClusters {
 public:
  // Borrowed collaborators, all outliving it; `retry` queues a key for the reconcile loop.
  struct Deps {
    Loop& loop;
    WorkerPool& workers;
    kube::KubeClient& hub;
    DispatcherMetrics& metrics;
    const Clock& clock;
    std::function<void(const std::string& key)> retry;
  };
  UnknownClusters(Deps deps, const ReconcilerSettings& settings);

  // Loop thread. `app` (key "<ns>/<name>") targets `cluster`, unknown on the hub.
  void Park(const std::string& key, const std::string& cluster, const nlohmann::json& app);
  void Unpark(const std::string& key);
  bool Contains(const std::string& key) const { return parked_.contains(key); }
  // `cluster` appeared: retry the Applications parked for it.
  void OnClusterAdded(const std::string& cluster);

 private:
  struct Parked {
    std::string cluster;
    std::optional<std::chrono::steady_clock::time_point> last_event;
  };
  void WriteEvent(const std::string& cluster, const nlohmann::json& app);
  void RetryAll();

  Deps deps_;
  const ReconcilerSettings& settings_;
  absl::flat_hash_map<std::string, Parked> parked_;  // by key
  bool retry_armed_ = false;
  uint64_t event_counter_ = 0;
};

}  // namespace mmi::dispatcher
