// The hand-over of one Application between Application and manifest delivery (ADR 0007,
// "Deletion and moves"; issue 38 item 6), without a prune and without orphans on the spoke.
// Both ways keep the resource id, so the switch is an update of one ManifestWork; each way is two
// updates, the second only once the agent acknowledged the first (store::AcknowledgedHandovers):
//   * Application -> manifests: first the spoke Application without Argo CD's resources
//     finalizer (WithoutPruningFinalizers), so that its deletion prunes nothing; then the
//     manifests, which the agent applies over the live objects (server-side apply as
//     `work-agent`, forced) while it deletes the Application;
//   * manifests -> Application: first the manifests with the delete option `Orphan`
//     (Orphaning), on which the work agent drops its owner reference from every applied object;
//     then the Application: the agent deletes only removed objects that still carry that owner
//     reference (none), and the spoke's Argo CD syncs the live objects into the Application.
// A switch back before the second step sends the first way again, with nothing lost: the
// finalizer comes back, or the delete option does.
//
// Pure; thread-safe.
#pragma once

#include <optional>

#include "libs/store/dispatch_store.h"
#include "nlohmann/json.hpp"
#include "services/dispatcher/apps/payload.h"

namespace mmi::dispatcher {

// What to send next for an Application that asks for manifests (`wants_manifests`) or not,
// given what was last recorded for its live resource (`recorded`; nullopt: nothing live yet, or
// no hand-over wanted: the way asked for goes at once) and whether the agent acknowledged that
// recorded version (`acknowledged`, counts only for a first step).
store::Delivery NextDelivery(bool wants_manifests, std::optional<store::Delivery> recorded,
                             bool acknowledged);

// Whether `delivery` is a first step, waiting for its acknowledgement.
bool IsFirstStep(store::Delivery delivery);

// Whether `delivery` bundles rendered manifests (kManifests, kOrphaningManifests).
bool DeliversManifests(store::Delivery delivery);

// `hub_app` without Argo CD's finalizers that make the deletion of the spoke's Application
// delete what it deployed: `resources-finalizer.argocd.argoproj.io` (and its `/background`,
// `/foreground` forms) and `post-delete-finalizer.argocd.argoproj.io` (post-delete hooks). Argo CD
// deletes an Application without them and leaves its resources in place.
nlohmann::json WithoutPruningFinalizers(nlohmann::json hub_app);

// `manifests` (a manifest bundle's dispatch) with the delete option `Orphan`, its hashes
// recomputed.
Dispatch Orphaning(Dispatch manifests);

}  // namespace mmi::dispatcher
