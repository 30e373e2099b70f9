// The live object a simulated agent reads its status feedback from, for a plain manifest of a
// ManifestBundle (manifest delivery, ADR 0007): the manifest as the spoke would show it once the
// workload has settled. A simulated agent has no API server, so the object's `.status` is made
// up from its spec: every replica ready, available and updated, the generation observed, a Job
// complete, a Pod running and ready, a Namespace active, a PersistentVolumeClaim bound, a
// LoadBalancer Service with an ingress. Kinds without a status (ConfigMap, Secret, RBAC...) stay
// as they are. Apply mode reads real objects instead (spoke_work_agent.h). Pure, thread-safe.
#pragma once

#include "nlohmann/json.hpp"

namespace mmi::fleet_sim {

// `manifest` with `metadata.generation` (1 when absent) and the settled `.status` of its kind.
nlohmann::json SettledObject(const nlohmann::json& manifest);

}  // namespace mmi::fleet_sim
