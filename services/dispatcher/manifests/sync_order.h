// The order the work agent applies a bundle's manifests in: Argo CD's sync order, so that a
// Namespace, a CRD or a ServiceAccount exists before what needs it. The work agent applies a
// bundle's manifests one after the other in the bundle's order; in the repo-server's order (the
// order of the files, or of Helm's output) an object listed before its Namespace fails its first
// apply and waits for the agent's next round (seen in e2e_manifests).
//
// The order is the one Argo CD's sync (gitops-engine `syncTasks.Sort`) gives the same objects:
//  1. sync phase, from the `argocd.argoproj.io/hook` annotation (PreSync, then Sync, the default,
//     then PostSync, then SyncFail);
//  2. sync wave, from `argocd.argoproj.io/sync-wave`, else `helm.sh/hook-weight`, else 0;
//  3. kind, in Helm's install order (Namespace, NetworkPolicy, ... Ingress, APIService); kinds
//     outside that list (custom resources) after all of them;
//  4. name;
// then a Namespace moves up to just before the first object in it, and a CustomResourceDefinition
// to just before the first object of its group and kind, whatever their waves.
//
// Hooks are ordered, not run as hooks: the bundle applies them like any other object.
//
// Pure; thread-safe.
#pragma once

#include <cstddef>
#include <vector>

#include "nlohmann/json.hpp"

namespace mmi::dispatcher::manifests {

// The positions of `manifests` (Kubernetes objects) in sync order: element k is the index in
// `manifests` of the k-th object to apply. Objects without metadata sort as wave 0, phase Sync.
std::vector<size_t> SyncOrder(const std::vector<nlohmann::json>& manifests);

}  // namespace mmi::dispatcher::manifests
