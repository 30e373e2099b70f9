// Writes the dispatcher makes on the hub, as pure builders plus small blocking helpers that run
// on the worker pool (hub-apis.md §5.5, §5.8, §6.4):
//  * removing the propagated `operation` and refresh annotation, guarded by `test` ops on the
//    very values that were sent, so a newer request is never removed by mistake;
//  * removing `resources-finalizer.argocd.argoproj.io`, guarded by `test` ops on the list
//    elements (never a blind merge of the finalizer list);
//  * core/v1 Events on a hub Application (libs/service/kube_event.h).
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "libs/kube/kube_client.h"
#include "libs/service/kube_event.h"
#include "nlohmann/json.hpp"

namespace mmi::dispatcher {

// The applications collection of argoproj.io/v1alpha1 in `ns`.
kube::ResourceRef ApplicationsRef(const std::string& ns);

// What was propagated from a hub Application and must be removed after dispatch.
struct PropagatedRequest {
  std::optional<nlohmann::json> operation;  // the `operation` object sent
  std::optional<std::string> refresh;       // the refresh annotation value sent
  bool empty() const { return !operation && !refresh; }
};

// The request carried by `app` (its `operation` and refresh annotation, when present).
PropagatedRequest PropagatedRequestOf(const nlohmann::json& app);

// JSON patch (RFC 6902) removing exactly `request` from an Application; empty array when
// nothing to do.
nlohmann::json StripRequestPatch(const PropagatedRequest& request);

// JSON patch removing every `resources-finalizer.argocd.argoproj.io` entry of `app`, each
// guarded by a `test` of its index; nullopt when `app` has none.
std::optional<nlohmann::json> ReleaseFinalizerPatch(const nlohmann::json& app);

// True when `app` lists resources-finalizer.argocd.argoproj.io.
bool HasResourcesFinalizer(const nlohmann::json& app);

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
