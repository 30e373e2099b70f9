// The hub collections the GitOpsCluster controller reads and writes, and the checks on cluster
// secrets its files share. Internal to services/dispatcher/gitops.
#pragma once

#include <string>
#include <utility>

#include "libs/kube/kube_client.h"
#include "libs/kube_object/object.h"
#include "nlohmann/json.hpp"
#include "services/dispatcher/gitops/gitops_cluster_controller_settings.h"

namespace mmi::dispatcher::internal {

inline kube::ResourceRef GitOpsClusters(std::string ns = "") {
  return {"apps.open-cluster-management.io", "v1beta1", "gitopsclusters", std::move(ns)};
}
inline kube::ResourceRef PlacementDecisions(std::string ns = "") {
  return {"cluster.open-cluster-management.io", "v1beta1", "placementdecisions", std::move(ns)};
}
inline kube::ResourceRef Placements(std::string ns) {
  return {"cluster.open-cluster-management.io", "v1beta1", "placements", std::move(ns)};
}
inline kube::ResourceRef ManagedClusters() {
  return {"cluster.open-cluster-management.io", "v1", "managedclusters", ""};
}
inline kube::ResourceRef Core(const char* resource, std::string ns = "") {
  return {"", "v1", resource, std::move(ns)};
}
inline kube::ResourceRef Rbac(const char* resource, std::string ns) {
  return {"rbac.authorization.k8s.io", "v1", resource, std::move(ns)};
}

// A cluster secret this controller wrote (labelled managed-by `managed_by`).
inline bool IsOwned(const nlohmann::json& secret, const std::string& managed_by) {
  return kube::Label(secret, kManagedByLabel) == managed_by;
}

}  // namespace mmi::dispatcher::internal
