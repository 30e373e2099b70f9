// The health of an Application from the health of its resources, exactly as Argo CD v3.2
// aggregates it (argo-cd controller/health.go setApplicationHealth):
//   - hooks and resources whose hook annotation says Skip do not count at all;
//   - a live resource annotated `argocd.argoproj.io/ignore-healthcheck: "true"` counts as present
//     but its health neither shows nor counts;
//   - a resource that is not live shows health Missing but does not lower the Application's
//     health (its OutOfSync status says it already);
//   - a child argoproj.io Application that is Missing or Unknown does not count;
//   - kinds without a health check show none and do not count;
//   - otherwise the worst health wins, in the order Healthy < Suspended < Progressing < Missing <
//     Degraded < Unknown, starting from Healthy (no resources: Healthy);
//   - when there are resources and none of them is live, the Application is Missing (unless it is
//     already worse).
// Pure functions, thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "services/status-sink/manifests/resource_health.h"

namespace mmi::status_sink {

// One resource of the Application, as the aggregation sees it.
struct ManagedResource {
  std::string group;  // "" for the core group
  std::string version;
  std::string kind;
  std::string namespace_;
  std::string name;
  bool hook = false;           // an Argo CD or Helm hook (not a Skip one)
  bool skipped = false;        // `argocd.argoproj.io/hook: Skip`
  bool live = false;           // present on the spoke
  bool ignore_health = false;  // `argocd.argoproj.io/ignore-healthcheck: "true"`
  // The resource's own health (HealthFromFeedback) when live; nullopt when its kind has none.
  std::optional<ResourceHealth> live_health;
};

// The health shown for the resource in `status.resources[]`: nullopt for hooks, skipped and
// ignored resources and for kinds without health; Missing when not live.
std::optional<ResourceHealth> ShownHealth(const ManagedResource& resource);

// The Application's `health.status`.
HealthCode AggregateHealth(const std::vector<ManagedResource>& resources);

// Hook facts from a manifest's annotations: `argocd.argoproj.io/hook` (comma-separated types;
// `Skip` means "do not apply") or else `helm.sh/hook` (any value but `crd-install`).
bool IsHook(const nlohmann::json& manifest);
bool IsSkipped(const nlohmann::json& manifest);

}  // namespace mmi::status_sink
