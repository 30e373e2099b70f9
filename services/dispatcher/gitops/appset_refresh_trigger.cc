#include "services/dispatcher/gitops/appset_refresh_trigger.h"

#include <memory>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "libs/kube_object/object.h"
#include "services/dispatcher/gitops/gitops_cluster.h"
#include "services/dispatcher/gitops/internal/controller_log.h"

namespace mmi::dispatcher {
namespace {

using nlohmann::json;

std::string PendingKey(const std::string& ns, const std::string& placement) {
  return absl::AsciiStrToLower(absl::StrCat(ns, "/", placement));
}

}  // namespace

void AppSetRefreshTrigger::DecisionsChanged(const std::string& placement_key) {
  pending_.insert(absl::AsciiStrToLower(placement_key));
}

void AppSetRefreshTrigger::Forget(const std::string& ns, const std::string& placement) {
  pending_.erase(PendingKey(ns, placement));
}

void AppSetRefreshTrigger::Reconciled(const std::string& ns, const std::string& placement) {
  if (pending_.erase(PendingKey(ns, placement)) == 0) {
    return;
  }
  if (!appsets_.HasSynced()) {
    // Their CRD or our RBAC for them may be missing: the ApplicationSets' requeue picks the
    // change up, as it would without us.
    if (!unsynced_logged_) {
      unsynced_logged_ = true;
      internal::GitOpsClusterLog().Warn(
          "ApplicationSets not listed (CRD or RBAC missing?); decisions changes wait for their "
          "requeue",
          {{"placement", absl::StrCat(ns, "/", placement)}});
    }
    return;
  }
  // The Placement's decisions now, and its label alone: a generator selecting by that label
  // still reads the Placement when its last PlacementDecision is gone.
  std::vector<kube::ObjectPtr> decisions;
  for (const kube::ObjectPtr& pd : decisions_.List(ns)) {
    if (absl::EqualsIgnoreCase(kube::Label(*pd, kPlacementLabel), placement)) {
      decisions.push_back(pd);
    }
  }
  decisions.push_back(std::make_shared<const json>(
      json{{"metadata", {{"namespace", ns}, {"labels", {{kPlacementLabel, placement}}}}}}));
  refresher_.DecisionsChanged(appsets_.List(), absl::StrCat(ns, "/", placement), decisions);
}

}  // namespace mmi::dispatcher
