// The health of one delivered resource, as Argo CD v3.2 would assess it (gitops-engine
// pkg/health), computed from the status feedback the work agent reports for it under the rules
// of libs/status_feedback (the agent never sends the live object, only those values).
//
// Kinds with a built-in Argo CD health check that these rules cover: apps Deployment,
// StatefulSet, DaemonSet, ReplicaSet; batch Job; core Pod, PersistentVolumeClaim, Service;
// networking.k8s.io and extensions Ingress; apiregistration.k8s.io APIService. Every other kind
// has no health (HasHealthCheck false), as in Argo CD without health customizations; its
// resources show none and do not count in the Application's health.
// Pure functions, thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "libs/cloudevents/manifest_bundle.h"

namespace mmi::status_sink {

// Argo CD's health codes, from the most to the least healthy (gitops-engine healthOrder).
enum class HealthCode { kHealthy, kSuspended, kProgressing, kMissing, kDegraded, kUnknown };

std::string_view HealthName(HealthCode code);  // "Healthy", "Suspended", ...
// Whether `candidate` is worse than `current` in that order (gitops-engine IsWorse).
bool IsWorse(HealthCode current, HealthCode candidate);

struct ResourceHealth {
  HealthCode status = HealthCode::kUnknown;
  std::string message;  // "" when Argo CD gives none
  friend bool operator==(const ResourceHealth&, const ResourceHealth&) = default;
};

// Whether Argo CD has a built-in health check for that group ("" for core) and kind.
bool HasHealthCheck(std::string_view group, std::string_view kind);

// What the agent reported for one resource.
struct ReportedFeedback {
  const std::vector<cloudevents::FeedbackValue>* values = nullptr;  // borrowed, never null
  // The StatusFeedbackSynced condition is True: the values are complete (absent = zero).
  bool synced = false;
};

// The health of the resource `name` of that group and kind, from its feedback. nullopt when the
// kind has no health check. Progressing "Waiting for status feedback" while the agent has sent
// no value yet and not confirmed its feedback; Unknown with the error when a value has the wrong
// type (Argo CD's result when a health check fails).
std::optional<ResourceHealth> HealthFromFeedback(std::string_view group, std::string_view kind,
                                                 std::string_view name,
                                                 const ReportedFeedback& feedback);

}  // namespace mmi::status_sink
