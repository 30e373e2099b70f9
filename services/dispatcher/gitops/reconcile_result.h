// What reconciling one GitOpsCluster produces, shared by the controller and its collaborators:
// the outcome, the cluster secrets it wants, and the status a valid spec's steps built.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>

#include "nlohmann/json.hpp"

namespace mmi::dispatcher {

// kFailed: a condition is False until the spec or the hub changes; kError: retried.
enum class ReconcileOutcome { kSuccess, kFailed, kError };

// What one GitOpsCluster wants, as of its last reconcile.
struct WantedSecrets {
  // "namespace/name" of each cluster secret it wants -> "namespace/cluster" it is for.
  std::map<std::string, std::string> secrets;
  std::set<std::string> clusters;  // clusters it decided
};

// What reconciling a valid spec decided: the status to write and what the GitOpsCluster wants
// now (nullopt: keep what it wanted before, after a transient failure or unusable decisions).
struct SpecResult {
  ReconcileOutcome outcome = ReconcileOutcome::kSuccess;
  nlohmann::json status;
  std::optional<WantedSecrets> wanted;
  // A cluster secret was created: a generator can see a cluster now that it could not before
  // (on a first install, before any PlacementDecision changes).
  bool created_cluster_secrets = false;
};

}  // namespace mmi::dispatcher
