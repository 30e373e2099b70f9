// ClusterSecretWriter: the blank Argo CD cluster secrets of a GitOpsCluster's decided clusters
// (hub-apis.md §4.4 step 10, §4.5). It builds each one (BlankClusterSecret, labelled
// app.kubernetes.io/managed-by=<managed_by>), records it as wanted on the run, and creates or
// updates it unless the cached secret is up to date; a cluster that already has a non-ACM
// Argo CD cluster secret in that namespace is refused. Sets ClustersRegistered on the run.
//
// Thread safety: gitops-loop only. `client` and `secrets` are borrowed and outlive it.
#pragma once

#include <map>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "libs/kube/informer.h"
#include "libs/kube/kube_client.h"
#include "nlohmann/json.hpp"
#include "services/dispatcher/gitops/gitops_cluster.h"
#include "services/dispatcher/gitops/reconcile_result.h"
#include "services/dispatcher/gitops/spec_run.h"

namespace mmi::dispatcher {

class ClusterSecretWriter {
 public:
  // `secrets`: the informer on Argo CD cluster secrets (all namespaces).
  ClusterSecretWriter(kube::KubeClient& client, const kube::Informer& secrets,
                      std::string field_manager, std::string managed_by)
      : client_(client),
        secrets_(secrets),
        field_manager_(std::move(field_manager)),
        managed_by_(std::move(managed_by)) {}

  // Writes the secrets of `cluster_objects` (the decided ManagedClusters by name). `retry`: an
  // earlier step failed and the reconcile is to be retried even if every secret is written.
  SpecResult Register(const nlohmann::json& gitops_cluster, const GitOpsClusterSpec& spec,
                      const std::map<std::string, kube::ObjectPtr>& cluster_objects, bool retry,
                      SpecRun& run);

 private:
  // Creates or updates one secret; OK when it is up to date. Sets `created` when it created it.
  absl::Status Write(const nlohmann::json& desired, bool& created);

  kube::KubeClient& client_;
  const kube::Informer& secrets_;
  const std::string field_manager_;
  const std::string managed_by_;
};

}  // namespace mmi::dispatcher
