// ArgoServerVerifier: the first steps of a GitOpsCluster's reconcile (hub-apis.md §4.4 steps
// 4-5): its Argo CD namespace may be used (the GitOpsCluster's own, or one labelled
// kGitOpsArgoNamespaceLabel=true) and holds an Argo CD server Service, unless the
// skipArgoNamespaceVerify annotation says not to look. Sets ArgoServerVerified on the run.
//
// Thread safety: gitops-loop only. `client` is borrowed and outlives it.
#pragma once

#include <optional>

#include "libs/kube/kube_client.h"
#include "nlohmann/json.hpp"
#include "services/dispatcher/gitops/gitops_cluster.h"
#include "services/dispatcher/gitops/reconcile_result.h"
#include "services/dispatcher/gitops/spec_run.h"

namespace mmi::dispatcher {

class ArgoServerVerifier {
 public:
  explicit ArgoServerVerifier(kube::KubeClient& client) : client_(client) {}

  // nullopt when verified; else the result the reconcile stops with.
  std::optional<SpecResult> Verify(const nlohmann::json& gitops_cluster,
                                   const GitOpsClusterSpec& spec, SpecRun& run);

 private:
  kube::KubeClient& client_;
};

}  // namespace mmi::dispatcher
