// What a simulated spoke Argo CD reports for one Application: a realistic `.status` object
// (sync, health, reconciledAt, resources, summary, operationState) built from the Application
// manifest the agent applied and from the simulated runtime state (sync/health, reconcile time).
//
// Pure logic, no clock: callers pass the times. Thread-compatible value types.
#pragma once

#include <optional>
#include <string>

#include "libs/cloudevents/event.h"
#include "nlohmann/json.hpp"

namespace mmi::fleet_sim {

inline constexpr std::string_view kSyncSynced = "Synced";
inline constexpr std::string_view kSyncOutOfSync = "OutOfSync";
inline constexpr std::string_view kHealthHealthy = "Healthy";
inline constexpr std::string_view kHealthProgressing = "Progressing";
inline constexpr std::string_view kHealthDegraded = "Degraded";

// The simulated live state of one Application on its spoke.
struct ApplicationRuntime {
  std::string sync_status{kSyncSynced};
  std::string health_status{kHealthHealthy};
  cloudevents::Timestamp reconciled_at{};
  // The last sync operation the spoke ran (the manifest's `.operation` when it carried one), and
  // when it ran; kept across later specs without `.operation`, as Argo CD keeps operationState.
  std::optional<nlohmann::json> last_operation;
  cloudevents::Timestamp operation_started_at{};
};

// The `.status` of `manifest` (an argoproj.io Application object) in state `runtime`. Keys are
// sorted (nlohmann's default), members Argo CD omits when empty are omitted.
nlohmann::json ApplicationStatus(const nlohmann::json& manifest, const ApplicationRuntime& runtime);

// The deterministic Git revision the simulated spoke "resolves" for `manifest`'s source (40 hex
// digits), so repeated reports of the same spec agree.
std::string SimulatedRevision(const nlohmann::json& manifest);

}  // namespace mmi::fleet_sim
