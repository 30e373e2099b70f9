#include "services/dispatcher/gitops/orphan_secret_collector.h"

#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "libs/kube_object/object.h"
#include "services/dispatcher/gitops/gitops_cluster.h"
#include "services/dispatcher/gitops/internal/controller_log.h"
#include "services/dispatcher/gitops/internal/hub_resources.h"

namespace mmi::dispatcher {
namespace {

using internal::Core;
using internal::IsOwned;
using internal::ManagedClusters;
using kube::Metadata;
using kube::StringAt;

}  // namespace

OrphanSecretCollector::OrphanSecretCollector(kube::KubeClient& client,
                                             const kube::Informer& gitops_clusters,
                                             const kube::Informer& secrets,
                                             const kube::Informer& managed_clusters,
                                             const GitOpsClusterControllerSettings& settings,
                                             prometheus::Gauge& managed_secrets)
    : client_(client),
      gitops_clusters_(gitops_clusters),
      secrets_(secrets),
      managed_clusters_(managed_clusters),
      settings_(settings),
      managed_secrets_(managed_secrets) {}

void OrphanSecretCollector::SetWanted(const std::string& key, std::optional<WantedSecrets> wanted) {
  auto it = by_gitops_cluster_.find(key);
  if (it != by_gitops_cluster_.end()) {
    for (const auto& [secret, cluster] : it->second.secrets) {
      if (--wanted_[secret] <= 0) {
        wanted_.erase(secret);
      }
    }
    by_gitops_cluster_.erase(it);
  }
  if (wanted.has_value()) {
    for (const auto& [secret, cluster] : wanted->secrets) {
      ++wanted_[secret];
    }
    by_gitops_cluster_.emplace(key, *std::move(wanted));
  }
  managed_secrets_.Set(static_cast<double>(wanted_.size()));
}

const WantedSecrets* OrphanSecretCollector::WantedBy(const std::string& key) const {
  auto it = by_gitops_cluster_.find(key);
  return it == by_gitops_cluster_.end() ? nullptr : &it->second;
}

bool OrphanSecretCollector::MayDelete(const std::string& cluster, bool superseded, bool& error) {
  if (superseded || settings_.orphan_secret_policy != OrphanSecretPolicy::kDeleteWhenClusterGone) {
    return true;
  }
  if (managed_clusters_.Get("", cluster) != nullptr) {
    return false;
  }
  auto mc = client_.Get(ManagedClusters(), cluster);  // the cache may lag: confirm the 404
  if (mc.ok()) {
    return false;
  }
  if (!absl::IsNotFound(mc.status())) {
    error = true;
    return false;
  }
  return true;
}

ReconcileOutcome OrphanSecretCollector::Collect() {
  if (settings_.orphan_secret_policy == OrphanSecretPolicy::kDeleteWhenUndecided) {
    // Deleting needs to know every GitOpsCluster's wishes; wait until each was reconciled (its
    // first reconcile enqueues this clean-up again).
    for (const kube::ObjectPtr& g : gitops_clusters_.List()) {
      if (!by_gitops_cluster_.contains(kube::ObjectKey(*g))) {
        return ReconcileOutcome::kSuccess;
      }
    }
  }
  std::set<std::string> wanted_clusters;  // "namespace/cluster" with a wanted secret
  for (const auto& [key, wanted] : by_gitops_cluster_) {
    for (const auto& [secret, cluster] : wanted.secrets) {
      wanted_clusters.insert(cluster);
    }
  }
  bool error = false;
  for (const kube::ObjectPtr& secret : secrets_.List()) {
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
    if (!MayDelete(cluster, superseded, error)) {
      continue;
    }
    kube::DeleteOptions only_this;
    only_this.precondition_uid = StringAt(Metadata(*secret), "uid");
    absl::Status st =
        client_.Delete(Core("secrets", ns), StringAt(Metadata(*secret), "name"), only_this);
    if (st.ok() || absl::IsNotFound(st)) {
      internal::GitOpsClusterLog().Info("orphaned cluster secret deleted",
                                        {{"resource", key}, {"cluster", cluster}});
    } else {
      internal::GitOpsClusterLog().Warn("cannot delete orphaned cluster secret",
                                        {{"resource", key}, {"error", st.ToString()}});
      error = true;
    }
  }
  return error ? ReconcileOutcome::kError : ReconcileOutcome::kSuccess;
}

}  // namespace mmi::dispatcher
