#include "services/dispatcher/gitops/placement_resolver.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "libs/kube_object/object.h"
#include "services/dispatcher/gitops/internal/hub_resources.h"

namespace mmi::dispatcher {

using internal::PlacementDecisions;
using internal::Placements;

std::optional<std::map<std::string, kube::ObjectPtr>> PlacementResolver::Resolve(
    const GitOpsClusterSpec& spec, SpecRun& run) {
  const std::string placement_key = kube::ObjectKey(spec.namespace_, spec.placement_name);
  if (auto placement = client_.Get(Placements(spec.namespace_), spec.placement_name);
      !placement.ok()) {
    if (!absl::IsNotFound(placement.status())) {
      run.Transient(absl::StrCat("GET Placement ", placement_key), placement.status());
      return std::nullopt;
    }
    run.Fail(kCondPlacementResolved, kReasonPlacementNotFound,
             absl::StrCat("Placement ", placement_key, " not found"));
    return std::nullopt;
  }
  kube::ListOptions list_options;
  list_options.label_selector = absl::StrCat(kPlacementLabel, "=", spec.placement_name);
  list_options.limit = decision_page_size_;
  auto decisions = kube::ListAll(client_, PlacementDecisions(spec.namespace_), list_options);
  if (!decisions.ok()) {
    run.Transient(absl::StrCat("LIST PlacementDecisions of ", placement_key), decisions.status());
    return std::nullopt;
  }
  auto clusters = ResolveDecisions(decisions->items);
  if (!clusters.ok()) {
    run.FailKeeping(kCondPlacementResolved, kReasonInvalidConfiguration,
                    std::string(clusters.status().message()));
    return std::nullopt;
  }
  std::map<std::string, kube::ObjectPtr> cluster_objects;
  std::vector<std::string> missing;
  for (const std::string& cluster : *clusters) {
    kube::ObjectPtr mc = managed_clusters_.Get("", cluster);
    if (mc == nullptr) {
      missing.push_back(cluster);
    } else {
      cluster_objects.emplace(cluster, std::move(mc));
    }
  }
  if (!missing.empty()) {
    // Upstream fails the whole step; the ManagedCluster's creation (or the decision's removal)
    // triggers the next reconcile.
    run.FailKeeping(kCondPlacementResolved, kReasonPlacementNotFound,
                    absl::StrCat("Placement ", placement_key, " decides ManagedCluster(s) ",
                                 absl::StrJoin(missing, ", "), " that do not exist"));
    return std::nullopt;
  }
  run.Set(
      kCondPlacementResolved, "True", kReasonSuccess,
      absl::StrCat("Placement ", placement_key, " resolved to ", clusters->size(),
                   " managed cluster(s) in ", decisions->items.size(), " PlacementDecision(s)"));
  run.wanted().clusters = *clusters;
  return cluster_objects;
}

}  // namespace mmi::dispatcher
