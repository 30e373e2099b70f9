// Selection of manifest delivery (ADR 0007, "Selection"; issue 38 item 1): which way a hub
// pull-model Application goes to its spokes, read from one annotation.
#pragma once

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"

namespace mmi::dispatcher::manifests {

// The opt-in annotation on a hub Application (an ApplicationSet template sets it for a fleet).
inline constexpr char kDeliveryAnnotation[] = "apps.open-cluster-management.io/delivery";
inline constexpr char kDeliveryApplication[] = "application";
inline constexpr char kDeliveryManifests[] = "manifests";

enum class DeliveryMode {
  // The Application itself goes to the spoke's Argo CD (annotation absent or `application`):
  // what the dispatcher always did, unchanged.
  kApplication,
  // The hub's repo-server renders the source; the work agent applies the manifests.
  kManifests,
};

// The delivery mode `hub_application` (Kubernetes JSON) asks for.
//
// kInvalidArgument when the Application cannot be delivered the way it asks: the annotation has
// another value, or it asks for manifests with a source this mode does not render (spec.sources,
// no spec.source, no spec.source.repoURL, a field of the wrong type: whatever
// argocd_repo::BuildManifestRequest refuses). Such an Application is delivered neither way. The
// status message is written for the Application's owner: it becomes the Warning Event and the
// message of the `ComparisonError` condition on the hub Application, never a silent skip.
//
// Pure; thread-safe.
absl::StatusOr<DeliveryMode> DeliveryModeOf(const nlohmann::json& hub_application);

}  // namespace mmi::dispatcher::manifests
