// The ManifestBundle of manifest delivery (ADR 0007, "Delivery"; issue 38 item 4): what one
// (Application, cluster) resource sends once the hub's repo-server rendered its source.
//
// Everything around the bundle is Application delivery's (apps/payload.h DispatchIdentityOf): the
// resource id, work name and work labels, so the dispatched_resources row, the outbox and the
// deletion flow are the same. The bundle itself carries the rendered manifests in Argo CD's
// sync order (sync_order.h), each with a `manifestConfigs` entry (server-side apply as field
// manager `work-agent` with force, the status feedback rules of libs/status_feedback), and a
// Foreground delete option, so deleting the bundle removes what was applied. The work metadata
// carries `apps.open-cluster-management.io/delivery: manifests`.
//
// The revision is in neither the bundle nor its metadata: a new commit that renders the same
// output has the same payload hash and sends nothing. The status sink reads the revision from
// the resource's `manifest_renders` row.
//
// Pure; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "services/dispatcher/apps/payload.h"

namespace mmi::dispatcher::manifests {

// The field manager the work agent applies the manifests with (server-side apply, forced: the
// rendered output owns the fields it sets, as Argo CD's own server-side sync does).
inline constexpr char kFieldManager[] = "work-agent";

// The plural resource name of `kind` without discovery, as Kubernetes'
// meta.UnsafeGuessKindToResource guesses it (lower case; "s" -> "ses", "y" -> "ies", else + "s")
// but right where that guess is wrong for kinds in common use: a vowel before the "y" keeps it
// ("Gateway" -> "gateways") and "Endpoints" stays "endpoints". The agent matches a
// `manifestConfigs` entry by group, resource, namespace and name, with the resource from its
// discovery; a CRD whose plural is irregular gets no feedback rule (its status shows no health),
// never a wrong one.
std::string GuessResourceOf(std::string_view kind);

// The dispatch of `hub_app` (a pull-model Application in manifest mode) carrying `manifests`
// (RenderedManifests::manifests: one Kubernetes object as JSON text each, in the repo-server's
// order; the bundle has them in sync order). kInvalidArgument from DispatchIdentityOf, or naming
// the manifest (`manifests[2]`) that is not a JSON object with apiVersion, kind and metadata.name:
// the render cannot be delivered.
absl::StatusOr<Dispatch> BuildManifestDispatch(const nlohmann::json& hub_app,
                                               const std::vector<std::string>& manifests,
                                               const PayloadSettings& settings);

}  // namespace mmi::dispatcher::manifests
