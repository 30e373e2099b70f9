// ClusterDirectory: what Decide() (decision.h) asks about the hub's ManagedClusters, so the pure
// decision core needs neither the informer nor the hub client. ManagedClusterTracker
// (managed_clusters.h) answers it from its informer; tests may use it directly.
//
// Thread safety: implementations are safe to call from the reconcile loop while they are fed
// from elsewhere.
#pragma once

#include <string>

namespace mmi::dispatcher {

class ClusterDirectory {
 public:
  virtual ~ClusterDirectory() = default;
  // A ManagedCluster of that name exists.
  virtual bool Known(const std::string& cluster) const = 0;
  // That ManagedCluster is the hub itself (local-cluster).
  virtual bool IsLocal(const std::string& cluster) const = 0;
};

}  // namespace mmi::dispatcher
