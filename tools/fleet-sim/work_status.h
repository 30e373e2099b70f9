// What a simulated work agent reports for a work (../shared/spec/maestro-protocol.md §2.3,
// §6.3): its own validation of a received ManifestBundle, and the ManifestBundleStatus of a held
// work (Applied/Available conditions, one resourceStatus entry per manifest, and for every
// JSONPaths feedback rule the value read from the live object, where an Argo CD Application
// carries its simulated `.status`). Pure functions of their arguments.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "libs/cloudevents/event.h"
#include "libs/cloudevents/manifest_bundle.h"
#include "libs/cloudevents/object_meta.h"
#include "libs/cloudevents/sequence_id.h"
#include "nlohmann/json.hpp"
#include "tools/fleet-sim/application_status.h"

namespace mmi::fleet_sim {

// The work label that remembers which source owns a work (§6.7).
inline constexpr std::string_view kOriginalSourceLabel =
    "cloudevents.open-cluster-management.io/originalsource";

// The member `key` of `value`, or nullptr when `value` is not an object or has no such member.
const nlohmann::json* Child(const nlohmann::json& value, std::string_view key);

// A manifest's `metadata` ({} when absent).
const nlohmann::json& MetadataOf(const nlohmann::json& manifest);

// Whether `manifest` is an Argo CD Application (kind Application, group argoproj.io).
bool IsApplication(const nlohmann::json& manifest);

// The agent's own validation (§6.3 step 4): non-empty, at most `max_bytes` of manifests, every
// manifest named, no generateName. kInvalidArgument naming the field.
absl::Status ValidateBundle(const cloudevents::ManifestBundle& bundle, std::size_t max_bytes);

// A condition with status "True", its transition time `when` cut to seconds.
cloudevents::Condition MakeCondition(std::string type, std::int64_t generation,
                                     cloudevents::Timestamp when, std::string reason,
                                     std::string message);

// The status of a work holding `bundle` at `version`, applied at `applied_at`, whose manifests'
// simulated runtimes are `runtimes` (one per manifest).
cloudevents::ManifestBundleStatus BuildWorkStatus(const cloudevents::ManifestBundle& bundle,
                                                  std::int32_t version,
                                                  cloudevents::Timestamp applied_at,
                                                  const std::vector<ApplicationRuntime>& runtimes);

// Who a status event speaks for: one work held by one agent.
struct WorkIdentity {
  std::string cluster;
  std::string agent_id;  // the CloudEvent `source`: `<cluster>-work-agent`
  std::string resource_id;
  std::int32_t version = 0;
  std::string original_source;
  std::string metadata_json;  // the agent-side ManifestWork ObjectMeta (WorkMetadataJson)
};

// A status event (update_request, or resync_response when `resync_response`) carrying
// `status`, with a fresh `sequenceid` from `sequence_ids` and the `statushash` of `status`,
// which is also stored in `*hash` when given.
absl::StatusOr<cloudevents::Event> MakeWorkStatusEvent(
    const WorkIdentity& work, const cloudevents::ManifestBundleStatus& status, bool resync_response,
    cloudevents::Timestamp now, cloudevents::SequenceIdGenerator& sequence_ids,
    std::string* hash = nullptr);

// The agent-side ManifestWork ObjectMeta the Go agents put in the `metadata` extension of their
// status events, from what the spec's `metadata` extension carried (`meta`): namespace = the
// cluster, uid = the resource id, generation = the version, the originalsource label, the
// creation time `created` when the source sent none; name = the resource id when none was sent.
absl::StatusOr<std::string> WorkMetadataJson(cloudevents::ObjectMeta meta,
                                             const std::string& cluster,
                                             const std::string& resource_id, std::int32_t version,
                                             const std::string& original_source,
                                             cloudevents::Timestamp created);

}  // namespace mmi::fleet_sim
