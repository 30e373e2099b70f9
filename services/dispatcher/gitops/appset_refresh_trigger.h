// AppSetRefreshTrigger: decides when the GitOpsCluster controller asks ApplicationSets to
// refresh. A change of a Placement's PlacementDecisions marks the Placement; once a GitOpsCluster
// of it has been reconciled (its cluster secrets written), the AppSetRefresher is handed the
// Placement's decisions now (plus its label alone, for a generator whose last PlacementDecision
// is gone) and every ApplicationSet. A Placement no GitOpsCluster uses is not ours: forgotten.
// While the ApplicationSets are not listed (their CRD or our RBAC may be missing), nothing is
// refreshed and their own requeue picks the change up; that is logged once.
//
// Thread safety: gitops-loop only. Collaborators are borrowed and outlive it.
#pragma once

#include <set>
#include <string>

#include "libs/kube/informer.h"
#include "services/dispatcher/gitops/appset_refresh.h"

namespace mmi::dispatcher {

class AppSetRefreshTrigger {
 public:
  // `appsets` and `decisions`: the controller's informers.
  AppSetRefreshTrigger(AppSetRefresher& refresher, const kube::Informer& appsets,
                       const kube::Informer& decisions)
      : refresher_(refresher), appsets_(appsets), decisions_(decisions) {}

  // The decisions of Placement "ns/name" changed.
  void DecisionsChanged(const std::string& placement_key);
  // No GitOpsCluster uses Placement `ns/placement`: its ApplicationSets are not ours to refresh.
  void Forget(const std::string& ns, const std::string& placement);
  // A GitOpsCluster of Placement `ns/placement` was reconciled: refreshes the ApplicationSets
  // reading its decisions when they changed since the last time.
  void Reconciled(const std::string& ns, const std::string& placement);

 private:
  AppSetRefresher& refresher_;
  const kube::Informer& appsets_;
  const kube::Informer& decisions_;
  // Placements ("ns/name", lower case) whose decisions changed and whose ApplicationSets were
  // not asked to refresh yet.
  std::set<std::string> pending_;
  bool unsynced_logged_ = false;
};

}  // namespace mmi::dispatcher
