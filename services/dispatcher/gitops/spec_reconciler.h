// SpecReconciler: the steps of one valid GitOpsCluster's reconcile after its spec parsed
// (hub-apis.md §4.4, non-agent path), in order:
//   policy template condition -> ArgoServerVerifier -> AppSetResourceWriter (failures do not
//   stop the reconcile) -> PlacementResolver -> ClusterSecretWriter.
// Returns a SpecResult: the status with every condition it set, the outcome, and what the
// GitOpsCluster wants now (nullopt: keep what it wanted before).
//
// Thread safety: gitops-loop only. Collaborators are borrowed and outlive it.
#pragma once

#include "libs/common/clock.h"
#include "libs/kube/informer.h"
#include "libs/kube/kube_client.h"
#include "nlohmann/json.hpp"
#include "services/dispatcher/gitops/appset_resource_writer.h"
#include "services/dispatcher/gitops/argo_server_verifier.h"
#include "services/dispatcher/gitops/cluster_secret_writer.h"
#include "services/dispatcher/gitops/gitops_cluster.h"
#include "services/dispatcher/gitops/gitops_cluster_controller_settings.h"
#include "services/dispatcher/gitops/placement_resolver.h"
#include "services/dispatcher/gitops/reconcile_result.h"

namespace mmi::dispatcher {

class SpecReconciler {
 public:
  // `managed_clusters` and `secrets`: the controller's informers.
  SpecReconciler(kube::KubeClient& client, const Clock& clock,
                 const kube::Informer& managed_clusters, const kube::Informer& secrets,
                 const GitOpsClusterControllerSettings& settings);

  // `status`: the GitOpsCluster's status as it was (its conditions ensured).
  SpecResult Reconcile(const nlohmann::json& gitops_cluster, const GitOpsClusterSpec& spec,
                       nlohmann::json status);

 private:
  const Clock& clock_;
  ArgoServerVerifier verifier_;
  AppSetResourceWriter appset_resources_;
  PlacementResolver placement_;
  ClusterSecretWriter secrets_;
};

}  // namespace mmi::dispatcher
