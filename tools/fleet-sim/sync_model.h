// How a simulated spoke Argo CD syncs an Application whose spec changed (--sync-model).
//
// `instant` (the default) reports every applied spec at once as the spoke would look once done
// (ClusterAgent keeps that path; nothing here runs). `argocd` follows the Application's sync
// policy the way Argo CD's application controller does (../shared/spec/hub-apis.md §1.2-§1.4,
// §1.7):
//   * a spec whose source or destination differs from what was last synced is `OutOfSync`
//     (`sync.revision` and `comparedTo` are the new target, as Argo CD's comparison reports them;
//     health stays, or is `Missing` while nothing was ever synced);
//   * automated sync on (`syncPolicy.automated` present, `automated.enabled` not false): after
//     `auto_sync_delay` the spoke starts an operation itself (`initiatedBy.automated: true`,
//     `sync.prune` and `syncOptions` from the policy, `retry` from the policy or {limit: 5});
//   * automated sync off (RollingSync sets `enabled: false`): OutOfSync until a spec carries an
//     `.operation` whose value differs from the previous spec's (what the work agent re-applies
//     with ignore-fields `OnSpokeChange`, §5.4-§5.5), so a resent spec does not run it again;
//   * an operation is reported `Running` (`startedAt`, the operation, a message), then after
//     `operation_duration` `Succeeded` (`finishedAt`, `syncResult`) with sync `Synced`, health
//     `Progressing`, a `history` entry appended (trimmed to `spec.revisionHistoryLimit`,
//     default 10), then after `progressing_duration` health `Healthy`;
//   * `selfHeal`: drift (churn making a synced Application OutOfSync) is synced back after
//     `auto_sync_delay` with `sync.autoHealAttemptsCount` counting the attempts. `allowEmpty`
//     changes nothing here (a simulated Application always has resources) and, as in Argo CD,
//     shows nowhere in the status.
//
// `ArgoCdSyncModel` is the pure core: it changes one ApplicationRuntime and says whether a
// status update is due and when its next step is; the caller (ClusterAgent) owns the timers,
// driven by the simulator's tick. Thread-compatible; no clock (callers pass the wall time).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>

#include "libs/cloudevents/event.h"
#include "nlohmann/json.hpp"
#include "tools/fleet-sim/application_status.h"

namespace mmi::fleet_sim {

enum class SyncModel { kInstant, kArgoCd };

// "instant" | "argocd"; nullopt for anything else.
std::optional<SyncModel> ParseSyncModel(std::string_view name);
std::string_view SyncModelName(SyncModel model);

struct SyncModelSettings {
  SyncModel model = SyncModel::kInstant;
  // argocd only: from a spec becoming OutOfSync (or drifting, with selfHeal) to the automated
  // operation starting.
  std::chrono::milliseconds auto_sync_delay{2'000};
  // argocd only: how long an operation stays Running.
  std::chrono::milliseconds operation_duration{2'000};
  // argocd only: how long health stays Progressing after a sync; 0 = Healthy at once.
  std::chrono::milliseconds progressing_duration{3'000};
};

// The Application's sync policy as the spoke reads it (`spec.syncPolicy`).
struct SyncPolicy {
  bool automated = false;       // `automated` present and `automated.enabled` not false
  bool prune = false;           // `automated.prune`
  bool self_heal = false;       // `automated.selfHeal`
  nlohmann::json sync_options;  // `syncOptions` (null when absent)
  nlohmann::json retry;         // `retry` (null when absent)
};
SyncPolicy SyncPolicyOf(const nlohmann::json& manifest);

// What Argo CD compares against live state: source(s) and destination. Never 0.
std::uint64_t ComparisonKey(const nlohmann::json& manifest);

// What one call did: whether the status changed (a status update is due), and the delay after
// which OnTimer must run, when a new timer is to be armed (replacing any armed one). nullopt
// leaves an armed timer as it is.
struct SyncStepResult {
  bool changed = false;
  std::optional<std::chrono::milliseconds> next;
};

class ArgoCdSyncModel {
 public:
  explicit ArgoCdSyncModel(SyncModelSettings settings) : settings_(settings) {}

  // A spec carrying `manifest` (an Application) was applied; `now` stamps the status.
  SyncStepResult OnSpec(const nlohmann::json& manifest, ApplicationRuntime& runtime,
                        cloudevents::Timestamp now) const;
  // The timer armed by an earlier result fired.
  SyncStepResult OnTimer(const nlohmann::json& manifest, ApplicationRuntime& runtime,
                         cloudevents::Timestamp now) const;
  // Churn made the live state drift (runtime.sync_status is now OutOfSync): with selfHeal an
  // automated sync is armed. Never changes the status itself.
  SyncStepResult OnDrift(const nlohmann::json& manifest, ApplicationRuntime& runtime) const;

  // Whether churn may change the Application: not tracked by this model, or nothing pending
  // and nothing awaited (synced to its current spec).
  static bool Settled(const ApplicationRuntime& runtime);

 private:
  SyncStepResult StartOperation(const nlohmann::json& manifest, nlohmann::json operation,
                                ApplicationRuntime& runtime, cloudevents::Timestamp now) const;
  SyncStepResult FinishOperation(const nlohmann::json& manifest, ApplicationRuntime& runtime,
                                 cloudevents::Timestamp now) const;
  SyncStepResult StartAutomatedSync(const nlohmann::json& manifest, ApplicationRuntime& runtime,
                                    cloudevents::Timestamp now) const;
  // Arms an automated sync when the policy asks for one and nothing else is pending.
  std::optional<std::chrono::milliseconds> ArmAutoSync(const nlohmann::json& manifest,
                                                       ApplicationRuntime& runtime) const;

  const SyncModelSettings settings_;
};

}  // namespace mmi::fleet_sim
