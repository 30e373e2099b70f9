// What the OCM work agent does with a received ManifestBundle, as a pure plan (fleet-sim's apply
// mode, README "Real spokes"): for each manifest, the API collection it lives in, how it is
// written (the bundle's update strategy: ServerSideApply with its field manager and force,
// Update, CreateOnly, ReadOnly), its status feedback rules, and whether a deletion of the work
// removes it (the bundle's delete option: Foreground deletes everything, Orphan nothing,
// SelectivelyOrphan all but what the orphaning rules name). Pure functions; no API server.
//
// Resources: the agent asks its RESTMapper; here the plural comes from a manifestConfig that
// names the manifest (its resourceIdentifier.resource), else from the kind as kubectl guesses it
// (lower case, "y" -> "ies", "s|x|z|ch|sh" -> "es", else "s"). A manifest with a namespace lives
// in that namespace, one without is cluster-scoped.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "libs/cloudevents/manifest_bundle.h"
#include "libs/kube/resource.h"
#include "nlohmann/json.hpp"

namespace mmi::fleet_sim {

// The annotation in which the agent keeps the hash of what it applied when a ServerSideApply
// strategy has ignoreFields (OCM's ManifestConfigSpecHashAnnotationKey).
inline constexpr std::string_view kConfigSpecHashAnnotation =
    "open-cluster-management.io/config-spec-hash";

// The agent's field manager when a ServerSideApply strategy names none.
inline constexpr std::string_view kDefaultFieldManager = "work-agent";

enum class WriteMode { kUpdate, kCreateOnly, kServerSideApply, kReadOnly };
std::string_view WriteModeName(WriteMode mode);

struct ManifestPlan {
  std::size_t ordinal = 0;
  std::string group;  // "" = core
  std::string version;
  std::string kind;
  std::string name;
  std::string namespace_;   // "" = cluster-scoped
  kube::ResourceRef ref;    // the collection, namespaced when namespace_ is set
  nlohmann::json manifest;  // the object to write
  WriteMode mode = WriteMode::kUpdate;
  std::string field_manager;  // kServerSideApply: the strategy's, else kDefaultFieldManager
  bool force = false;         // kServerSideApply: take conflicting fields
  // kServerSideApply with ignoreFields, as OCM's agent: a hash of the manifest without its
  // OnSpokePresent fields (OnSpokeChange fields count), in kConfigSpecHashAnnotation of both
  // manifests. A live object with that hash is not applied again, so what the spoke changed in
  // an ignored field stays; one without it gets `manifest_when_present` (without the
  // OnSpokePresent fields); a missing one gets `manifest` (with them).
  std::string config_spec_hash;
  nlohmann::json manifest_when_present;
  std::vector<cloudevents::FeedbackRule> feedback_rules;
  bool orphan_on_delete = false;  // the delete option keeps it on the spoke
};

struct ApplyPlan {
  std::vector<ManifestPlan> manifests;  // in bundle order; deletes use Foreground propagation
};

// `object` without the member `path` names: ".a.b" or ".a.b[\"c.d/e\"]" (the JSONPath forms
// ignoreFields use). Nothing when the path does not exist or cannot be parsed.
void RemoveJsonPath(nlohmann::json& object, std::string_view path);

// kubectl's guess of a kind's plural resource: "Deployment" -> "deployments", "Ingress" ->
// "ingresses", "NetworkPolicy" -> "networkpolicies".
std::string GuessResource(std::string_view kind);

// Owner references, as OCM's work agent keeps them (the ManifestWork DeletePropagation
// enhancement, open-cluster-management-io/enhancements, "Implementation Details" 1-3): an object
// the agent applies gets the owner reference of its AppliedManifestWork unless the work's delete
// option orphans it (applied again under an orphaning option, it loses it), a ReadOnly one never
// gets it; a manifest removed from the work, and the work's deletion, delete only objects that
// still carry it. fleet-sim writes no owner references (it has no AppliedManifestWork): the plan
// an object was last applied under says whether it would carry one.
bool CarriesOwnerReference(const ManifestPlan& applied);

// What an update from `applied` (the plan last applied) to `next` deletes: the manifests `next`
// no longer holds (by group, resource, namespace and name) whose objects carry the owner
// reference. In `applied`'s order.
std::vector<ManifestPlan> DroppedToDelete(const ApplyPlan& applied, const ApplyPlan& next);

// The plan for `bundle`. kInvalidArgument naming the manifest (`manifests[2]`) when one has no
// apiVersion, kind or name, or an update strategy type the agent does not know.
absl::StatusOr<ApplyPlan> PlanBundle(const cloudevents::ManifestBundle& bundle);

}  // namespace mmi::fleet_sim
