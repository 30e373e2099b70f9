// What every agent of fleet-sim (the simulated ClusterAgent, agent_state.h, and the apply mode's
// SpokeWorkAgent, spoke_work_agent.h) reads from a received event the same way
// (../shared/spec/maestro-protocol.md §1.4, §6.1, §6.5): what to do with it, its resource key,
// the ManifestWork metadata it carries, and the spec resync request an agent sends. Pure
// functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "libs/cloudevents/codec_options.h"
#include "libs/cloudevents/event.h"
#include "libs/cloudevents/object_meta.h"
#include "libs/cloudevents/resync.h"

namespace mmi::fleet_sim {

enum class AgentAction {
  kIgnore,        // not something an agent acts on
  kApply,         // spec create/update, or a resync response carrying a spec
  kDelete,        // spec delete, or a spec event with `deletiontimestamp` (whatever its action)
  kStatusResync,  // status resync request
};

struct AgentStep {
  AgentAction action = AgentAction::kIgnore;
  bool from_resync = false;  // a spec resync response
};

// What an agent does with `event` of the manifestbundles data type, whose parsed type is `type`.
AgentStep AgentStepFor(const cloudevents::EventType& type, const cloudevents::Event& event);

// Runs the handler of `step`'s action: `on_resync()`, `on_apply()` or
// `on_delete(step.from_resync)`; `ignored` for kIgnore. Both kinds of agent dispatch through it.
template <typename Result, typename OnResync, typename OnApply, typename OnDelete>
Result RunAgentStep(const AgentStep& step, OnResync on_resync, OnApply on_apply, OnDelete on_delete,
                    Result ignored) {
  switch (step.action) {
    case AgentAction::kStatusResync:
      return on_resync();
    case AgentAction::kApply:
      return on_apply();
    case AgentAction::kDelete:
      return on_delete(step.from_resync);
    case AgentAction::kIgnore:
      break;
  }
  return ignored;
}

// The `resourceid` and `resourceversion` every spec event carries.
struct ResourceKey {
  std::string id;
  std::int32_t version = 0;
};
// kInvalidArgument naming the extension when one is missing or malformed.
absl::StatusOr<ResourceKey> ResourceKeyOf(const cloudevents::Event& event);

// The ObjectMeta of the `metadata` extension ({} when absent); kInvalidArgument when malformed.
absl::StatusOr<cloudevents::ObjectMeta> SpecMetadataOf(const cloudevents::Event& event,
                                                       const cloudevents::CodecLimits& limits);

// `what: <message>` as kInvalidArgument: a received event's missing or bad part.
absl::Status Malformed(const absl::Status& status, std::string_view what);

// The `spec.resync_request` of agent `agent_id` for `cluster` listing `versions` (§6.5).
cloudevents::Event AgentSpecResyncRequest(std::string_view agent_id, std::string_view cluster,
                                          const cloudevents::ResourceVersionList& versions,
                                          cloudevents::Timestamp now);

}  // namespace mmi::fleet_sim
