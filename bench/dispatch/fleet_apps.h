// The hub side of bench/dispatch: N pull-model Applications as the ApplicationSet controller
// generates them (examples/applicationset.yaml rendered for one cluster, with its ownerReference
// and the resources finalizer), held in a cache whose initial list is complete (what the
// Applications informer holds once synced), and the ManagedClusters they target.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "libs/kube/informer.h"
#include "nlohmann/json.hpp"
#include "services/dispatcher/apps/app_events.h"
#include "services/dispatcher/apps/managed_clusters.h"

namespace mmi::bench {

// The fleet's shape: `applications` spread over `clusters` (one ApplicationSet per
// applications / clusters, as in bench/fleet).
struct FleetShape {
  std::size_t applications = 10'000;
  std::size_t clusters = 1'000;
};

std::string ClusterName(std::size_t c);

// Application `n` of `shape`, as the hub returns it (before the informer's transform).
nlohmann::json GeneratedApplication(const FleetShape& shape, std::size_t n);
// Which Applications a restart run changes: `count` of them spread evenly over the fleet.
std::vector<std::size_t> ChangedApplications(const FleetShape& shape, std::size_t count);

// A synced, read-only cache of hub objects keyed "<namespace>/<name>": the dispatcher's
// Applications informer after its initial list. Built once; thread-safe to read.
class SyncedLister final : public dispatcher::ObjectLister {
 public:
  // Every Application of `shape`, passed through the informer's transform; those in `changed`
  // with a new spec.source.targetRevision (as if edited on the hub).
  explicit SyncedLister(const FleetShape& shape, const std::vector<std::size_t>& changed = {});
  // "<namespace>/<name>" of Application `n`.
  static std::string KeyOf(const FleetShape& shape, std::size_t n);

  kube::ObjectPtr Get(std::string_view ns, std::string_view name) const override;
  std::vector<kube::ObjectPtr> List() const override { return objects_; }
  bool synced() const override { return true; }

 private:
  std::vector<kube::ObjectPtr> objects_;  // sorted by key
  std::vector<std::string> keys_;         // same order
};

// Fills `tracker` with the fleet's ManagedClusters and marks it synced.
void AddClusters(const FleetShape& shape, dispatcher::ManagedClusterTracker& tracker);

}  // namespace mmi::bench
