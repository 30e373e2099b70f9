#include "tools/fleet-sim/spoke_status.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "tools/fleet-sim/status_feedback.h"

namespace mmi::fleet_sim {
namespace {

using cloudevents::Condition;
using cloudevents::ManifestBundleStatus;
using cloudevents::ManifestCondition;
using cloudevents::Timestamp;

// A condition; its lastTransitionTime is `previous`'s when the status is unchanged there.
Condition Make(std::string type, bool status, std::int64_t generation, std::string reason,
               std::string message, Timestamp now, const std::vector<Condition>* previous) {
  Condition condition;
  condition.type = std::move(type);
  condition.status = status ? "True" : "False";
  condition.observed_generation = generation;
  condition.reason = std::move(reason);
  condition.message = std::move(message);
  condition.last_transition_time = std::chrono::floor<std::chrono::seconds>(now);
  if (previous != nullptr) {
    const Condition* before = cloudevents::FindCondition(*previous, condition.type);
    if (before != nullptr && before->status == condition.status &&
        before->observed_generation == condition.observed_generation) {
      condition.last_transition_time = before->last_transition_time;
    }
  }
  return condition;
}

}  // namespace

ManifestBundleStatus BuildSpokeStatus(const SpokeStatusInput& input) {
  const ApplyPlan& plan = *input.plan;
  const std::vector<ManifestObservation>& observed = *input.observed;
  const std::int64_t generation = input.version;
  const std::vector<Condition>* previous_work =
      input.previous != nullptr ? &input.previous->conditions : nullptr;
  ManifestBundleStatus status;
  bool all_applied = true;
  int unavailable = 0;
  for (std::size_t i = 0; i < plan.manifests.size(); ++i) {
    const ManifestPlan& m = plan.manifests[i];
    static const ManifestObservation kNothing{absl::UnknownError("not applied yet"), std::nullopt};
    const ManifestObservation& seen = i < observed.size() ? observed[i] : kNothing;
    const std::vector<Condition>* previous = nullptr;
    if (input.previous != nullptr && i < input.previous->resource_status.size()) {
      previous = &input.previous->resource_status[i].conditions;
    }
    ManifestCondition manifest;
    manifest.resource_meta = {static_cast<std::int32_t>(m.ordinal),
                              m.group,
                              m.version,
                              m.kind,
                              m.ref.resource,
                              m.name,
                              m.namespace_};
    if (seen.applied.ok()) {
      manifest.conditions.push_back(Make("Applied", true, generation, "AppliedManifestComplete",
                                         "Apply manifest complete", input.now, previous));
    } else {
      all_applied = false;
      manifest.conditions.push_back(Make(
          "Applied", false, generation, "AppliedManifestFailed",
          absl::StrCat("Failed to apply manifest: ", seen.applied.message()), input.now, previous));
    }
    if (seen.live.has_value()) {
      manifest.conditions.push_back(Make("Available", true, 0, "ResourceAvailable",
                                         "Resource is available", input.now, previous));
    } else {
      ++unavailable;
      manifest.conditions.push_back(Make("Available", false, 0, "ResourceNotAvailable",
                                         "Resource is not available", input.now, previous));
    }
    if (!seen.live.has_value() && input.previous != nullptr &&
        i < input.previous->resource_status.size()) {
      // A vanished object keeps the feedback last read from it, as the agent's status does.
      const ManifestCondition& before = input.previous->resource_status[i];
      manifest.status_feedback = before.status_feedback;
      if (const Condition* synced =
              cloudevents::FindCondition(before.conditions, "StatusFeedbackSynced");
          synced != nullptr) {
        manifest.conditions.push_back(*synced);
      }
    }
    if (seen.live.has_value() && !m.feedback_rules.empty()) {
      FeedbackResult feedback =
          ReadFeedback(m.feedback_rules, *seen.live, m.group, m.version, m.kind);
      // The agent moves this condition's transition time whenever the values change.
      const bool same_values =
          input.previous != nullptr && i < input.previous->resource_status.size() &&
          input.previous->resource_status[i].status_feedback == feedback.values;
      manifest.status_feedback = std::move(feedback.values);
      const bool synced = feedback.error.empty();
      manifest.conditions.push_back(
          Make("StatusFeedbackSynced", synced, 0,
               synced ? "StatusFeedbackSynced" : "StatusFeedbackSyncFailed",
               std::move(feedback.error), input.now, same_values ? previous : nullptr));
    }
    status.resource_status.push_back(std::move(manifest));
  }
  // A work this agent never applied (a delete of an unknown work) reports only its deletion.
  if (!plan.manifests.empty()) {
    status.conditions.push_back(
        Make("Applied", all_applied, generation,
             all_applied ? "AppliedManifestWorkComplete" : "AppliedManifestWorkFailed",
             all_applied ? "Apply manifest work complete" : "Failed to apply manifest work",
             input.now, previous_work));
    status.conditions.push_back(
        Make("Available", unavailable == 0, generation,
             unavailable == 0 ? "ResourcesAvailable" : "ResourcesNotAvailable",
             unavailable == 0 ? std::string("All resources are available")
                              : absl::StrCat(unavailable, " of ", plan.manifests.size(),
                                             " resources are not available"),
             input.now, previous_work));
  }
  if (input.deleting || input.deleted) {
    status.conditions.push_back(Make("Deleting", true, generation, "WorkDeleting",
                                     "ManifestWork is being deleted", input.now, previous_work));
  }
  if (input.deleted) {
    status.conditions.push_back(
        Make(std::string(cloudevents::kConditionDeleted), true, 0, "ManifestsDeleted",
             absl::StrCat("The manifests are deleted from the cluster ", input.cluster), input.now,
             previous_work));
  }
  return status;
}

}  // namespace mmi::fleet_sim
