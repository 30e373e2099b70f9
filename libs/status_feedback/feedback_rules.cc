#include "libs/status_feedback/feedback_rules.h"

#include <string>
#include <utility>

namespace mmi::status_feedback {
namespace {

using cloudevents::FeedbackRule;
using cloudevents::JsonPath;

struct PathSpec {
  std::string_view name;
  std::string_view path;
};

FeedbackRule JsonPaths(std::initializer_list<PathSpec> paths) {
  FeedbackRule rule{.type = std::string(cloudevents::kFeedbackJsonPaths), .json_paths = {}};
  rule.json_paths.reserve(paths.size());
  for (const PathSpec& p : paths) {
    rule.json_paths.push_back(JsonPath{
        .name = std::string(p.name), .version = std::nullopt, .path = std::string(p.path)});
  }
  return rule;
}

FeedbackRule WellKnown() {
  return FeedbackRule{.type = std::string(cloudevents::kFeedbackWellKnownStatus), .json_paths = {}};
}

constexpr PathSpec kGenerationPath{kGeneration, ".metadata.generation"};
constexpr PathSpec kObservedGenerationPath{kObservedGeneration, ".status.observedGeneration"};
constexpr PathSpec kDesiredReplicasPath{kDesiredReplicas, ".spec.replicas"};
constexpr PathSpec kConditionsPath{kConditions, ".status.conditions"};

}  // namespace

bool HasWellKnownStatus(std::string_view group, std::string_view version, std::string_view kind) {
  if (version != "v1") {
    return false;
  }
  return (group == "apps" && kind == "Deployment") || (group == "batch" && kind == "Job") ||
         (group.empty() && kind == "Pod");
}

std::vector<FeedbackRule> FeedbackRulesFor(std::string_view group, std::string_view version,
                                           std::string_view kind) {
  const bool well_known = HasWellKnownStatus(group, version, kind);
  if (group == "apps" && kind == "Deployment") {
    // WellKnownStatus lacks what the rollout rule reads: generations, updated and desired
    // replicas, the pause and the Progressing condition (ProgressDeadlineExceeded).
    FeedbackRule extra = JsonPaths({kGenerationPath,
                                    kObservedGenerationPath,
                                    {kUpdatedReplicas, ".status.updatedReplicas"},
                                    kDesiredReplicasPath,
                                    {kPaused, ".spec.paused"},
                                    kConditionsPath});
    if (!well_known) {  // apps/v1beta* Deployments: read the WellKnownStatus fields too
      extra.json_paths.push_back(JsonPath{
          .name = std::string(kReplicas), .version = std::nullopt, .path = ".status.replicas"});
      extra.json_paths.push_back(JsonPath{.name = std::string(kAvailableReplicas),
                                          .version = std::nullopt,
                                          .path = ".status.availableReplicas"});
      return {std::move(extra)};
    }
    return {WellKnown(), std::move(extra)};
  }
  if (group == "batch" && kind == "Job") {
    // Complete, Failed and Suspended conditions with their messages.
    if (!well_known) {
      return {JsonPaths({kConditionsPath})};
    }
    return {WellKnown(), JsonPaths({kConditionsPath})};
  }
  if (group.empty() && kind == "Pod") {
    FeedbackRule extra = JsonPaths({{kRestartPolicy, ".spec.restartPolicy"},
                                    {kMessage, ".status.message"},
                                    {kContainerStatuses, ".status.containerStatuses"},
                                    {kInitContainerStatuses, ".status.initContainerStatuses"},
                                    kConditionsPath});
    if (!well_known) {
      extra.json_paths.push_back(JsonPath{
          .name = std::string(kPodPhase), .version = std::nullopt, .path = ".status.phase"});
      return {std::move(extra)};
    }
    return {WellKnown(), std::move(extra)};
  }
  if (group == "apps" && kind == "StatefulSet") {
    return {JsonPaths({kGenerationPath,
                       kObservedGenerationPath,
                       kDesiredReplicasPath,
                       {kReadyReplicas, ".status.readyReplicas"},
                       {kUpdatedReplicas, ".status.updatedReplicas"},
                       {kCurrentReplicas, ".status.currentReplicas"},
                       {kUpdateStrategy, ".spec.updateStrategy"},
                       {kUpdateRevision, ".status.updateRevision"},
                       {kCurrentRevision, ".status.currentRevision"}})};
  }
  if (group == "apps" && kind == "DaemonSet") {
    return {JsonPaths({kGenerationPath,
                       kObservedGenerationPath,
                       {kUpdateStrategy, ".spec.updateStrategy"},
                       {kDesiredNumberScheduled, ".status.desiredNumberScheduled"},
                       {kUpdatedNumberScheduled, ".status.updatedNumberScheduled"},
                       {kNumberAvailable, ".status.numberAvailable"}})};
  }
  if (group == "apps" && kind == "ReplicaSet") {
    return {JsonPaths({kGenerationPath,
                       kObservedGenerationPath,
                       kDesiredReplicasPath,
                       {kAvailableReplicas, ".status.availableReplicas"},
                       kConditionsPath})};
  }
  if (group.empty() && kind == "PersistentVolumeClaim") {
    return {JsonPaths({{kPhase, ".status.phase"}})};
  }
  if (kind == "Ingress" && (group == "networking.k8s.io" || group == "extensions")) {
    return {JsonPaths({{kLoadBalancerIngress, ".status.loadBalancer.ingress"}})};
  }
  if (group.empty() && kind == "Service") {
    return {JsonPaths(
        {{kServiceType, ".spec.type"}, {kLoadBalancerIngress, ".status.loadBalancer.ingress"}})};
  }
  // APIService (its Available condition) and every other kind: the conditions.
  return {JsonPaths({kConditionsPath})};
}

}  // namespace mmi::status_feedback
