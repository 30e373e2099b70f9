// PlacementResolver: the ManagedClusters a GitOpsCluster's Placement decides (hub-apis.md §4.4
// step 8, §3.4). It reads the Placement, every page of its PlacementDecisions, and the decided
// ManagedClusters from the informer's cache; a missing Placement or ManagedCluster fails
// PlacementResolved, unusable decisions keep what the GitOpsCluster wanted before.
//
// Thread safety: gitops-loop only. `client` and `managed_clusters` are borrowed and outlive it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "libs/kube/informer.h"
#include "libs/kube/kube_client.h"
#include "services/dispatcher/gitops/gitops_cluster.h"
#include "services/dispatcher/gitops/spec_run.h"

namespace mmi::dispatcher {

class PlacementResolver {
 public:
  // `decision_page_size`: the `limit` of each PlacementDecisions page.
  PlacementResolver(kube::KubeClient& client, const kube::Informer& managed_clusters,
                    int64_t decision_page_size)
      : client_(client),
        managed_clusters_(managed_clusters),
        decision_page_size_(decision_page_size) {}

  // The decided ManagedClusters by name (also recorded as the run's wanted clusters); nullopt
  // when the reconcile stops (the run holds why).
  std::optional<std::map<std::string, kube::ObjectPtr>> Resolve(const GitOpsClusterSpec& spec,
                                                                SpecRun& run);

 private:
  kube::KubeClient& client_;
  const kube::Informer& managed_clusters_;
  const int64_t decision_page_size_;
};

}  // namespace mmi::dispatcher
