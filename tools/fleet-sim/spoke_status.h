// The ManifestBundleStatus the OCM work agent reports for a work on a real spoke (fleet-sim's
// apply mode), as the captured agent traffic shows it
// (../shared/spec/samples/captured/agentevents.jsonl): a pure function of what was applied and
// what is live.
//
// Work conditions, each with observedGeneration = the work's version:
//   Applied    True AppliedManifestWorkComplete | False AppliedManifestWorkFailed
//   Available  True ResourcesAvailable | False ResourcesNotAvailable "<n> of <m> resources ..."
//   Deleting   True WorkDeleting, while a deletion waits for the objects to go
//   Deleted    True ManifestsDeleted (no observedGeneration), once they are gone
// Per manifest (resourceMeta, statusFeedback, conditions):
//   Applied               True AppliedManifestComplete (observedGeneration) |
//                         False AppliedManifestFailed "Failed to apply manifest: <error>"
//   Available             True ResourceAvailable | False ResourceNotAvailable (the object exists)
//   StatusFeedbackSynced  when the manifest has feedback rules and its object exists: True, or
//                         False StatusFeedbackSyncFailed with the reason; once the object is
//                         gone, the feedback and this condition of `previous` stay
// A condition whose status and observedGeneration did not change keeps the lastTransitionTime of
// `previous`; StatusFeedbackSynced only while the feedback values stay the same, too (as the
// captured agent statuses show).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "libs/cloudevents/event.h"
#include "libs/cloudevents/manifest_bundle.h"
#include "nlohmann/json.hpp"
#include "tools/fleet-sim/apply_plan.h"

namespace mmi::fleet_sim {

// What the agent knows of one manifest on the spoke.
struct ManifestObservation {
  absl::Status applied;                // the last apply's outcome
  std::optional<nlohmann::json> live;  // the object as last read or watched; nullopt = absent
};

struct SpokeStatusInput {
  const ApplyPlan* plan = nullptr;                             // required
  const std::vector<ManifestObservation>* observed = nullptr;  // one per manifest; required
  std::int32_t version = 0;
  std::string cluster;
  bool deleting = false;
  bool deleted = false;
  cloudevents::Timestamp now{};
  const cloudevents::ManifestBundleStatus* previous = nullptr;  // nullable
};

cloudevents::ManifestBundleStatus BuildSpokeStatus(const SpokeStatusInput& input);

}  // namespace mmi::fleet_sim
