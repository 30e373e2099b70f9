// Writes the dispatcher makes on the hub: small blocking helpers that run on the worker pool
// (hub-apis.md §5.5, §5.8, §6.4). The patches they send are built by pure functions elsewhere:
//  * removing the propagated `operation` and refresh annotation (propagated_request.h), guarded
//    by `test` ops on the very values that were sent, so a newer request is never removed;
//  * removing `resources-finalizer.argocd.argoproj.io` (finalizers.h), guarded by `test` ops on
//    the list elements (never a blind merge of the finalizer list);
//  * core/v1 Events on a hub Application (libs/service/kube_event.h).
#pragma once

#include <string>

#include "absl/status/status.h"
#include "libs/kube/kube_client.h"
#include "libs/service/kube_event.h"
#include "nlohmann/json.hpp"
#include "services/dispatcher/apps/propagated_request.h"

namespace mmi::dispatcher {

// The applications collection of argoproj.io/v1alpha1 in `ns`.
kube::ResourceRef ApplicationsRef(const std::string& ns);

// Applies StripRequestPatch to the hub Application. OK when removed; kFailedPrecondition when the
// guarded values changed meanwhile (a newer request: nothing removed); kNotFound when the
// Application is gone; other codes from the client.
absl::Status StripRequest(kube::KubeClient& hub, const std::string& ns, const std::string& name,
                          const PropagatedRequest& request);

// Reads the hub Application and removes the finalizer with ReleaseFinalizerPatch, re-reading and
// retrying (up to `attempts`) when the list changed under us. OK also when the Application or
// the finalizer is already gone.
absl::Status ReleaseFinalizer(kube::KubeClient& hub, const std::string& ns, const std::string& name,
                              int attempts = 5);

// Events on hub Applications (UnknownManagedCluster) are built by the shared helper.
using service::KubeEventSpec;
using service::MakeKubeEvent;

}  // namespace mmi::dispatcher
