// The status feedback rules of manifest delivery (issue #38): which values the work agent reports
// for each manifest of a ManifestBundle, so that the status sink can show the Argo CD health of
// every resource on the hub. The dispatcher puts FeedbackRulesFor() into the bundle's
// `manifestConfigs`; the sink reads the values back under the names below
// (services/status-sink/manifests/). One table, so both sides agree.
//
// The agent's `WellKnownStatus` rule (open-cluster-management-io/ocm
// pkg/work/spoke/statusfeedback/rules/rule.go) covers only apps/v1 Deployment (ReadyReplicas,
// Replicas, AvailableReplicas), batch/v1 Job (JobComplete, JobSucceeded) and v1 Pod (PodReady,
// PodPhase). Argo CD's health rules (gitops-engine pkg/health) need more, so those kinds get
// WellKnownStatus plus a JSONPaths rule for the rest, and every other kind a JSONPaths rule:
// the fields of its health rule when Argo CD has a built-in one, `.status.conditions` otherwise.
// Scalar paths come back as Integer, String or Boolean; object and array paths as JsonRaw (the
// Maestro agent runs with RawFeedbackJsonString). A path with nothing there reports no value.
//
// Pure functions, thread-safe. Target `mmi::status_feedback`.
#pragma once

#include <string_view>
#include <vector>

#include "libs/cloudevents/manifest_bundle.h"

namespace mmi::status_feedback {

// --- WellKnownStatus names (reported by the agent for the kinds above) ---
inline constexpr std::string_view kReadyReplicas = "ReadyReplicas";          // Deployment
inline constexpr std::string_view kReplicas = "Replicas";                    // Deployment
inline constexpr std::string_view kAvailableReplicas = "AvailableReplicas";  // Deployment
inline constexpr std::string_view kJobComplete = "JobComplete";              // Job
inline constexpr std::string_view kJobSucceeded = "JobSucceeded";            // Job
inline constexpr std::string_view kPodReady = "PodReady";                    // Pod
inline constexpr std::string_view kPodPhase = "PodPhase";                    // Pod

// --- JSONPaths names (ours) ---
inline constexpr std::string_view kGeneration = "Generation";  // .metadata.generation
inline constexpr std::string_view kObservedGeneration =
    "ObservedGeneration";  // .status.observedGeneration
inline constexpr std::string_view kDesiredReplicas = "DesiredReplicas";  // .spec.replicas
inline constexpr std::string_view kUpdatedReplicas = "UpdatedReplicas";  // .status.updatedReplicas
inline constexpr std::string_view kCurrentReplicas = "CurrentReplicas";  // .status.currentReplicas
inline constexpr std::string_view kPaused = "Paused";                    // .spec.paused
inline constexpr std::string_view kUpdateStrategy = "UpdateStrategy";    // .spec.updateStrategy
inline constexpr std::string_view kUpdateRevision = "UpdateRevision";    // .status.updateRevision
inline constexpr std::string_view kCurrentRevision = "CurrentRevision";  // .status.currentRevision
inline constexpr std::string_view kDesiredNumberScheduled = "DesiredNumberScheduled";
inline constexpr std::string_view kUpdatedNumberScheduled = "UpdatedNumberScheduled";
inline constexpr std::string_view kNumberAvailable = "NumberAvailable";
inline constexpr std::string_view kRestartPolicy = "RestartPolicy";          // .spec.restartPolicy
inline constexpr std::string_view kMessage = "Message";                      // .status.message
inline constexpr std::string_view kContainerStatuses = "ContainerStatuses";  // JsonRaw array
inline constexpr std::string_view kInitContainerStatuses = "InitContainerStatuses";
inline constexpr std::string_view kPhase = "Phase";              // .status.phase
inline constexpr std::string_view kServiceType = "ServiceType";  // .spec.type
inline constexpr std::string_view kLoadBalancerIngress = "LoadBalancerIngress";
inline constexpr std::string_view kConditions = "Conditions";  // .status.conditions, JsonRaw array

// The feedback rules for a manifest of that group ("" for core), version and kind: never empty.
std::vector<cloudevents::FeedbackRule> FeedbackRulesFor(std::string_view group,
                                                        std::string_view version,
                                                        std::string_view kind);

// Whether the agent's WellKnownStatus rule knows that group/version/kind.
bool HasWellKnownStatus(std::string_view group, std::string_view version, std::string_view kind);

}  // namespace mmi::status_feedback
