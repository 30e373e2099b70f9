// ManagedClusterTracker: which ManagedClusters (cluster.open-cluster-management.io/v1) exist on
// the hub and which of them is the hub itself (local-cluster), fed by an Informer on
// managedclusters (hub-apis.md §3.1, §5.7). The reconciler asks it before dispatching: an
// Application whose cluster is unknown is parked and retried when the cluster appears
// (`on_added`), a local-cluster target is skipped.
//
// Thread-safe: the informer thread writes, the reconcile loop reads. `on_added` runs on the
// informer thread and must only enqueue.
#pragma once

#include <functional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "libs/kube/informer.h"
#include "services/dispatcher/apps/cluster_directory.h"

namespace mmi::dispatcher {

inline constexpr char kLocalClusterName[] = "local-cluster";
inline constexpr char kLocalClusterLabel[] = "local-cluster";

// managedclusters (cluster-scoped).
kube::ResourceRef ManagedClustersRef();

// True when `managed_cluster` is the hub's own registration: named local-cluster, or labelled
// local-cluster=true (case-insensitive value).
bool IsLocalCluster(const nlohmann::json& managed_cluster);

class ManagedClusterTracker final : public kube::InformerHandler, public ClusterDirectory {
 public:
  explicit ManagedClusterTracker(std::function<void(const std::string& cluster)> on_added = {});

  // Replaces the callback; only before the informer starts.
  void SetOnAdded(std::function<void(const std::string& cluster)> on_added);

  // ClusterDirectory
  bool Known(const std::string& cluster) const override;
  bool IsLocal(const std::string& cluster) const override;
  bool synced() const;
  size_t size() const;

  // kube::InformerHandler
  void OnAdd(const kube::ObjectPtr& object, bool in_initial_list) override;
  void OnUpdate(const kube::ObjectPtr& old_object, const kube::ObjectPtr& new_object) override;
  void OnDelete(const kube::ObjectPtr& last_state) override;
  void OnSynced() override;

 private:
  void Upsert(const nlohmann::json& object);

  std::function<void(const std::string&)> on_added_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, bool> clusters_ ABSL_GUARDED_BY(mu_);  // name -> local
  bool synced_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace mmi::dispatcher
