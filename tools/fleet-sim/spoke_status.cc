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

// One manifest's status entry: Applied, Available and, with feedback rules, the values read
// from the live object with StatusFeedbackSynced. `before`: its entry in the previous status.
ManifestCondition ManifestStatus(const ManifestPlan& m, const ManifestObservation& seen,
                                 const ManifestCondition* before, std::int64_t generation,
                                 Timestamp now) {
  const std::vector<Condition>* previous = before != nullptr ? &before->conditions : nullptr;
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
                                       "Apply manifest complete", now, previous));
  } else {
    manifest.conditions.push_back(
        Make("Applied", false, generation, "AppliedManifestFailed",
             absl::StrCat("Failed to apply manifest: ", seen.applied.message()), now, previous));
  }
  manifest.conditions.push_back(
      seen.live.has_value()
          ? Make("Available", true, 0, "ResourceAvailable", "Resource is available", now, previous)
          : Make("Available", false, 0, "ResourceNotAvailable", "Resource is not available", now,
                 previous));
  if (!seen.live.has_value() && before != nullptr) {
    // A vanished object keeps the feedback last read from it, as the agent's status does.
    manifest.status_feedback = before->status_feedback;
    if (const Condition* synced =
            cloudevents::FindCondition(before->conditions, "StatusFeedbackSynced");
        synced != nullptr) {
      manifest.conditions.push_back(*synced);
    }
  }
  if (seen.live.has_value() && !m.feedback_rules.empty()) {
    FeedbackResult feedback =
        ReadFeedback(m.feedback_rules, *seen.live, m.group, m.version, m.kind);
    // The agent moves this condition's transition time whenever the values change.
    const bool same_values = before != nullptr && before->status_feedback == feedback.values;
    manifest.status_feedback = std::move(feedback.values);
    const bool synced = feedback.error.empty();
    manifest.conditions.push_back(Make("StatusFeedbackSynced", synced, 0,
                                       synced ? "StatusFeedbackSynced" : "StatusFeedbackSyncFailed",
                                       std::move(feedback.error), now,
                                       same_values ? previous : nullptr));
  }
  return manifest;
}

// The work's own conditions: Applied and Available over every manifest (none for a work this
// agent never applied, a delete of an unknown work), then Deleting and Deleted.
void AddWorkConditions(const SpokeStatusInput& input, bool all_applied, int unavailable,
                       ManifestBundleStatus& status) {
  const std::int64_t generation = input.version;
  const std::vector<Condition>* previous_work =
      input.previous != nullptr ? &input.previous->conditions : nullptr;
  const std::size_t manifests = input.plan->manifests.size();
  if (manifests > 0) {
    status.conditions.push_back(
        Make("Applied", all_applied, generation,
             all_applied ? "AppliedManifestWorkComplete" : "AppliedManifestWorkFailed",
             all_applied ? "Apply manifest work complete" : "Failed to apply manifest work",
             input.now, previous_work));
    status.conditions.push_back(
        Make("Available", unavailable == 0, generation,
             unavailable == 0 ? "ResourcesAvailable" : "ResourcesNotAvailable",
             unavailable == 0
                 ? std::string("All resources are available")
                 : absl::StrCat(unavailable, " of ", manifests, " resources are not available"),
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
}

}  // namespace

ManifestBundleStatus BuildSpokeStatus(const SpokeStatusInput& input) {
  const ApplyPlan& plan = *input.plan;
  const std::vector<ManifestObservation>& observed = *input.observed;
  static const ManifestObservation kNothing{absl::UnknownError("not applied yet"), std::nullopt};
  ManifestBundleStatus status;
  bool all_applied = true;
  int unavailable = 0;
  for (std::size_t i = 0; i < plan.manifests.size(); ++i) {
    const ManifestObservation& seen = i < observed.size() ? observed[i] : kNothing;
    const ManifestCondition* before =
        input.previous != nullptr && i < input.previous->resource_status.size()
            ? &input.previous->resource_status[i]
            : nullptr;
    all_applied = all_applied && seen.applied.ok();
    unavailable += seen.live.has_value() ? 0 : 1;
    status.resource_status.push_back(
        ManifestStatus(plan.manifests[i], seen, before, input.version, input.now));
  }
  AddWorkConditions(input, all_applied, unavailable, status);
  return status;
}

}  // namespace mmi::fleet_sim
