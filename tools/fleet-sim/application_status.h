// What a simulated spoke Argo CD reports for one Application: a realistic `.status` object
// (sync, health, reconciledAt, resources, summary, operationState) built from the Application
// manifest the agent applied and from the simulated runtime state (sync/health, reconcile time).
//
// Pure logic, no clock: callers pass the times. Thread-compatible value types.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "libs/cloudevents/event.h"
#include "nlohmann/json.hpp"

namespace mmi::fleet_sim {

inline constexpr std::string_view kSyncSynced = "Synced";
inline constexpr std::string_view kSyncOutOfSync = "OutOfSync";
inline constexpr std::string_view kHealthHealthy = "Healthy";
inline constexpr std::string_view kHealthProgressing = "Progressing";
inline constexpr std::string_view kHealthDegraded = "Degraded";
// Nothing of the Application is deployed yet (a new Application not synced so far).
inline constexpr std::string_view kHealthMissing = "Missing";

// Who started an operation (Argo CD's OperationInitiator, `initiatedBy`).
struct OperationInitiator {
  std::string username;    // omitted when empty
  bool automated = false;  // omitted when false
};

// One completed sync, as Argo CD records it in `status.history`.
struct SyncHistoryEntry {
  std::int64_t id = 0;
  std::string revision;
  // Shared with ArgoCdSyncState::operation_source of the operation it records (immutable), so
  // a synced Application holds its source once.
  std::shared_ptr<const nlohmann::json> source;
  OperationInitiator initiated_by;
  cloudevents::Timestamp deploy_started_at{};
  cloudevents::Timestamp deployed_at{};
};

// The step of the Argo CD sync model (sync_model.h) that the Application's timer is armed for.
enum class SyncStep : std::uint8_t {
  kNone,         // nothing pending: settled, or OutOfSync waiting for an `operation`
  kAutoSync,     // automated sync (or self-heal) starts an operation
  kOperation,    // the running operation finishes (Succeeded)
  kProgressing,  // the synced workload becomes Healthy
};

// What the Argo CD sync model (--sync-model argocd) tracks for one Application. Small on
// purpose (hashes, not copies of the spec; the operation as compact JSON text), since a fleet
// holds 300,000 of them: about 1 KB once synced, plus ~0.3 KB per further history entry.
struct ArgoCdSyncState {
  SyncStep step = SyncStep::kNone;
  std::uint64_t timer = 0;              // the armed timer's token; 0 = none armed
  std::uint64_t compared_key = 0;       // ComparisonKey of the spec last applied
  std::uint64_t synced_key = 0;         // ComparisonKey last synced; 0 = never synced
  std::uint64_t desired_operation = 0;  // hash of the `.operation` the last spec carried; 0 none
  // The last operation run (`operationState.operation`), as compact JSON text; "" = none yet.
  std::string operation;
  bool operation_running = false;  // operationState.phase Running (else Succeeded)
  cloudevents::Timestamp operation_finished_at{};
  std::uint64_t operation_key = 0;  // ComparisonKey the last operation deploys
  std::string operation_revision;   // revision the last operation deploys
  std::shared_ptr<const nlohmann::json> operation_source;  // source it deploys (see history)
  std::string deployed_revision;  // revision last synced; "" = nothing deployed
  std::vector<SyncHistoryEntry> history;
};

// The simulated live state of one Application on its spoke.
struct ApplicationRuntime {
  std::string sync_status{kSyncSynced};
  std::string health_status{kHealthHealthy};
  cloudevents::Timestamp reconciled_at{};
  // The last sync operation the spoke ran (the manifest's `.operation` when it carried one), and
  // when it ran; kept across later specs without `.operation`, as Argo CD keeps operationState.
  // The instant model only (argocd keeps it in ArgoCdSyncState::operation).
  std::optional<nlohmann::json> last_operation;
  cloudevents::Timestamp operation_started_at{};
  // Set by the Argo CD sync model only (a pointer: 8 bytes for the instant model's Applications):
  // operationState, history and the deployed revision come from here. Absent (the instant
  // model), every operation reads as Succeeded at once and the deployed revision is the spec's.
  std::unique_ptr<ArgoCdSyncState> argocd;
};

// The `.status` of `manifest` (an argoproj.io Application object) in state `runtime`. Keys are
// sorted (nlohmann's default), members Argo CD omits when empty are omitted.
nlohmann::json ApplicationStatus(const nlohmann::json& manifest, const ApplicationRuntime& runtime);

// The Application's (first) source: `spec.source`, else `spec.sources[0]`, else {}.
nlohmann::json ApplicationSource(const nlohmann::json& manifest);

// The deterministic Git revision the simulated spoke "resolves" for `manifest`'s source (40 hex
// digits), so repeated reports of the same spec agree.
std::string SimulatedRevision(const nlohmann::json& manifest);

}  // namespace mmi::fleet_sim
