// The cluster secrets the GitOpsClusters want: who wants which (SetManaged) and the clean-up of
// the ones nobody wants any more (CleanUpOrphans, hub-apis.md §4.7).
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "libs/common/log.h"
#include "services/dispatcher/gitops/gitops_cluster_controller.h"
#include "services/dispatcher/gitops/internal/controller_handler.h"
#include "services/dispatcher/gitops/internal/hub_resources.h"

namespace mmi::dispatcher {
namespace {

using internal::Core;
using internal::IsOwned;
using internal::ManagedClusters;
using kube::Metadata;
using kube::StringAt;

const log::Logger& Log() {
  static const log::Logger logger("dispatcher.gitopscluster");
  return logger;
}

}  // namespace

GitOpsClusterController::Outcome GitOpsClusterController::CleanUpOrphans() {
  if (settings_.orphan_secret_policy == OrphanSecretPolicy::kDeleteWhenUndecided) {
    // Deleting needs to know every GitOpsCluster's wishes; wait until each was reconciled (its
    // first reconcile enqueues this clean-up again).
    for (const kube::ObjectPtr& g : gitops_clusters_->List()) {
      if (!managed_.contains(kube::ObjectKey(*g))) {
        return Outcome::kSuccess;
      }
    }
  }
  std::set<std::string> wanted_clusters;  // "namespace/cluster" with a wanted secret
  for (const auto& [key, managed] : managed_) {
    for (const auto& [secret, cluster] : managed.secrets) {
      wanted_clusters.insert(cluster);
    }
  }
  bool error = false;
  for (const kube::ObjectPtr& secret : secrets_->List()) {
    if (!IsOwned(*secret, settings_.managed_by)) {
      continue;
    }
    const std::string key = kube::ObjectKey(*secret);
    const std::string cluster = ClusterOfSecret(*secret);
    if (wanted_.contains(key) || cluster.empty()) {
      continue;  // wanted, or its cluster is unknown: never deleted (§4.7)
    }
    const std::string ns = StringAt(Metadata(*secret), "namespace");
    const bool superseded = wanted_clusters.contains(kube::ObjectKey(ns, cluster)) &&
                            EffectiveSecretData(*secret)["server"] ==
                                absl::StrCat("https://", cluster, "-control-plane");
    if (!superseded &&
        settings_.orphan_secret_policy == OrphanSecretPolicy::kDeleteWhenClusterGone) {
      if (managed_clusters_->Get("", cluster) != nullptr) {
        continue;
      }
      auto mc = client_.Get(ManagedClusters(), cluster);  // the cache may lag: confirm the 404
      if (mc.ok()) {
        continue;
      }
      if (!absl::IsNotFound(mc.status())) {
        error = true;
        continue;
      }
    }
    const std::string name = StringAt(Metadata(*secret), "name");
    kube::DeleteOptions only_this;
    only_this.precondition_uid = StringAt(Metadata(*secret), "uid");
    absl::Status st = client_.Delete(Core("secrets", ns), name, only_this);
    if (st.ok() || absl::IsNotFound(st)) {
      Log().Info("orphaned cluster secret deleted", {{"resource", key}, {"cluster", cluster}});
    } else {
      Log().Warn("cannot delete orphaned cluster secret",
                 {{"resource", key}, {"error", st.ToString()}});
      error = true;
    }
  }
  return error ? Outcome::kError : Outcome::kSuccess;
}

}  // namespace mmi::dispatcher
