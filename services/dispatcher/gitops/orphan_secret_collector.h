// OrphanSecretCollector: which cluster secrets the GitOpsClusters want, and the clean-up of the
// ones this controller wrote that nobody wants any more (hub-apis.md §4.7). What happens to such
// an orphan is settings.orphan_secret_policy; a secret of ours superseded by another wanted one
// for the same cluster and namespace, pointing to the same server, is deleted whatever the
// policy (§4.5). Only secrets labelled managed-by=<settings.managed_by> are ever deleted, each
// with a uid precondition. Keeps mmi_gitopscluster_managed_secrets equal to the wanted count.
//
// Thread safety: gitops-loop only. Collaborators are borrowed and outlive it.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "libs/kube/informer.h"
#include "libs/kube/kube_client.h"
#include "prometheus/gauge.h"
#include "services/dispatcher/gitops/gitops_cluster_controller_settings.h"
#include "services/dispatcher/gitops/reconcile_result.h"

namespace mmi::dispatcher {

class OrphanSecretCollector {
 public:
  // The informers are the controller's; `managed_secrets` is the gauge it keeps.
  OrphanSecretCollector(kube::KubeClient& client, const kube::Informer& gitops_clusters,
                        const kube::Informer& secrets, const kube::Informer& managed_clusters,
                        const GitOpsClusterControllerSettings& settings,
                        prometheus::Gauge& managed_secrets);

  // Replaces (nullopt: forgets) what the GitOpsCluster `key` ("ns/name") wants.
  void SetWanted(const std::string& key, std::optional<WantedSecrets> wanted);
  // What the GitOpsCluster `key` wanted at its last reconcile; nullptr: not known.
  const WantedSecrets* WantedBy(const std::string& key) const;
  // Some GitOpsCluster wants the secret `secret_key` ("ns/name").
  bool IsWanted(const std::string& secret_key) const { return wanted_.contains(secret_key); }

  // Deletes the orphans; kError when a read or delete failed (retried).
  ReconcileOutcome Collect();

 private:
  // An orphan of `cluster` may be deleted now (superseded, or as the policy says). Sets `error`
  // when its ManagedCluster could not be read.
  bool MayDelete(const std::string& cluster, bool superseded, bool& error);

  kube::KubeClient& client_;
  const kube::Informer& gitops_clusters_;
  const kube::Informer& secrets_;
  const kube::Informer& managed_clusters_;
  const GitOpsClusterControllerSettings& settings_;
  prometheus::Gauge& managed_secrets_;
  std::map<std::string, WantedSecrets> by_gitops_cluster_;  // by GitOpsCluster key "ns/name"
  std::map<std::string, int> wanted_;  // secret "ns/name" -> GitOpsClusters wanting it
};

}  // namespace mmi::dispatcher
