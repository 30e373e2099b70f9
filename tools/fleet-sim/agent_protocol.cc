#include "tools/fleet-sim/agent_protocol.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "libs/cloudevents/maestro_events.h"
#include "libs/cloudevents/resource_id.h"

namespace mmi::fleet_sim {

using cloudevents::Event;

AgentStep AgentStepFor(const cloudevents::EventType& type, const Event& event) {
  using cloudevents::Action;
  if (type.subresource == cloudevents::Subresource::kStatus) {
    return {
        type.action == Action::kResyncRequest ? AgentAction::kStatusResync : AgentAction::kIgnore,
        false};
  }
  // Presence of `deletiontimestamp` means "delete" whatever the action (§1.4).
  const bool deletion = event.HasExtension(cloudevents::kExtDeletionTimestamp);
  switch (type.action) {
    case Action::kCreateRequest:
    case Action::kUpdateRequest:
      return {deletion ? AgentAction::kDelete : AgentAction::kApply, false};
    case Action::kDeleteRequest:
      return {AgentAction::kDelete, false};
    case Action::kResyncResponse:
      return {deletion ? AgentAction::kDelete : AgentAction::kApply, true};
    default:
      return {AgentAction::kIgnore, false};
  }
}

absl::Status Malformed(const absl::Status& status, std::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(std::string(what), ": ", status.message()));
}

absl::StatusOr<ResourceKey> ResourceKeyOf(const Event& event) {
  auto id = event.ResourceId();
  if (!id.ok()) {
    return Malformed(id.status(), "resourceid");
  }
  auto version = event.ResourceVersion();
  if (!version.ok()) {
    return Malformed(version.status(), "resourceversion");
  }
  return ResourceKey{*std::move(id), *version};
}

absl::StatusOr<cloudevents::ObjectMeta> SpecMetadataOf(const Event& event,
                                                       const cloudevents::CodecLimits& limits) {
  if (!event.HasExtension(cloudevents::kExtMetadata)) {
    return cloudevents::ObjectMeta{};
  }
  auto parsed = cloudevents::ObjectMetaOf(event, limits);
  if (!parsed.ok()) {
    return Malformed(parsed.status(), "metadata");
  }
  return parsed;
}

Event AgentSpecResyncRequest(std::string_view agent_id, std::string_view cluster,
                             const cloudevents::ResourceVersionList& versions,
                             cloudevents::Timestamp now) {
  auto event = cloudevents::MakeSpecResyncRequest(agent_id, cluster, versions,
                                                  cloudevents::NewUuidV4(), now);
  // Resource IDs come from decoded (valid UTF-8) events, so encoding cannot fail; an empty list
  // ("send everything") always encodes.
  if (!event.ok()) {
    event =
        cloudevents::MakeSpecResyncRequest(agent_id, cluster, {}, cloudevents::NewUuidV4(), now);
  }
  return *std::move(event);
}

}  // namespace mmi::fleet_sim
