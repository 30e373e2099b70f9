#include "tools/fleet-sim/sync_model.h"

#include <functional>
#include <memory>
#include <string>
#include <utility>

namespace mmi::fleet_sim {
namespace {

using cloudevents::Timestamp;
using nlohmann::json;

// Argo CD's default `spec.revisionHistoryLimit`.
constexpr std::int64_t kDefaultHistoryLimit = 10;

const json* Child(const json& value, std::string_view key) {
  if (!value.is_object()) {
    return nullptr;
  }
  auto it = value.find(key);
  return it == value.end() ? nullptr : &*it;
}

bool BoolAt(const json* value, std::string_view key, bool fallback) {
  const json* child = value != nullptr ? Child(*value, key) : nullptr;
  return child != nullptr && child->is_boolean() ? child->get<bool>() : fallback;
}

// A stable, non-zero digest of a JSON value (nlohmann dumps objects with sorted keys).
std::uint64_t HashOf(const json& value) {
  const std::uint64_t hash = std::hash<std::string>{}(value.dump());
  return hash == 0 ? 1 : hash;
}

std::int64_t HistoryLimit(const json& manifest) {
  const json* spec = Child(manifest, "spec");
  const json* limit = spec != nullptr ? Child(*spec, "revisionHistoryLimit") : nullptr;
  if (limit == nullptr || !limit->is_number_integer() || limit->get<std::int64_t>() < 0) {
    return kDefaultHistoryLimit;
  }
  return limit->get<std::int64_t>();
}

// `autoHealAttemptsCount` of the last operation, 0 when it had none.
std::int64_t HealAttempts(const ArgoCdSyncState& state) {
  const json operation = json::parse(state.operation, nullptr, /*allow_exceptions=*/false);
  const json* sync = Child(operation, "sync");
  const json* count = sync != nullptr ? Child(*sync, "autoHealAttemptsCount") : nullptr;
  return count != nullptr && count->is_number_integer() ? count->get<std::int64_t>() : 0;
}

}  // namespace

std::optional<SyncModel> ParseSyncModel(std::string_view name) {
  if (name == "instant") {
    return SyncModel::kInstant;
  }
  if (name == "argocd") {
    return SyncModel::kArgoCd;
  }
  return std::nullopt;
}

std::string_view SyncModelName(SyncModel model) {
  return model == SyncModel::kArgoCd ? "argocd" : "instant";
}

SyncPolicy SyncPolicyOf(const json& manifest) {
  SyncPolicy policy;
  const json* spec = Child(manifest, "spec");
  const json* sync_policy = spec != nullptr ? Child(*spec, "syncPolicy") : nullptr;
  if (sync_policy == nullptr) {
    return policy;
  }
  const json* automated = Child(*sync_policy, "automated");
  if (automated != nullptr && automated->is_object()) {
    // Argo CD: automated sync is on unless `enabled` is explicitly false.
    policy.automated = BoolAt(automated, "enabled", true);
    policy.prune = BoolAt(automated, "prune", false);
    policy.self_heal = BoolAt(automated, "selfHeal", false);
  }
  if (const json* options = Child(*sync_policy, "syncOptions"); options != nullptr) {
    policy.sync_options = *options;
  }
  if (const json* retry = Child(*sync_policy, "retry"); retry != nullptr) {
    policy.retry = *retry;
  }
  return policy;
}

std::uint64_t ComparisonKey(const json& manifest) {
  const json* spec = Child(manifest, "spec");
  json compared = json::object();
  for (std::string_view key : {"source", "sources", "destination"}) {
    if (const json* value = spec != nullptr ? Child(*spec, key) : nullptr; value != nullptr) {
      compared[std::string(key)] = *value;
    }
  }
  return HashOf(compared);
}

bool ArgoCdSyncModel::Settled(const ApplicationRuntime& runtime) {
  if (runtime.argocd == nullptr) {
    return true;
  }
  const ArgoCdSyncState& state = *runtime.argocd;
  return state.step == SyncStep::kNone && state.compared_key == state.synced_key;
}

SyncStepResult ArgoCdSyncModel::OnSpec(const json& manifest, ApplicationRuntime& runtime,
                                       Timestamp now) const {
  if (runtime.argocd == nullptr) {
    // A new Application: nothing of it is deployed yet.
    runtime.argocd = std::make_unique<ArgoCdSyncState>();
    runtime.sync_status = std::string(kSyncOutOfSync);
    runtime.health_status = std::string(kHealthMissing);
  }
  ArgoCdSyncState& state = *runtime.argocd;
  runtime.reconciled_at = now;  // a new spec makes Argo CD compare at once
  const bool was_behind = state.compared_key != state.synced_key;
  state.compared_key = ComparisonKey(manifest);
  if (state.compared_key != state.synced_key) {
    runtime.sync_status = std::string(kSyncOutOfSync);
  } else if (was_behind) {
    runtime.sync_status = std::string(kSyncSynced);  // back to what is deployed
  }
  // The work agent applies `.operation` only when the hub changed it (ignore-fields
  // OnSpokeChange): the same value resent is not a new request.
  const json* operation = Child(manifest, "operation");
  const std::uint64_t desired =
      operation != nullptr && operation->is_object() ? HashOf(*operation) : 0;
  const bool requested = desired != 0 && desired != state.desired_operation;
  state.desired_operation = desired;
  // A request that arrives while an operation runs does not restart it: Argo CD goes on with the
  // running one and clears `operation` when it ends. (The hub's `operation` is stripped once
  // dispatched, so Argo CD's RollingSync, which sees the Application still OutOfSync while the
  // sync runs, writes the same operation again; a restart would never let the sync finish.)
  if (requested && !state.operation_running) {
    return StartOperation(manifest, *operation, runtime, now);
  }
  return {true, ArmAutoSync(manifest, runtime)};
}

SyncStepResult ArgoCdSyncModel::OnTimer(const json& manifest, ApplicationRuntime& runtime,
                                        Timestamp now) const {
  if (runtime.argocd == nullptr) {
    return {};
  }
  const SyncStep step = runtime.argocd->step;
  runtime.argocd->step = SyncStep::kNone;
  switch (step) {
    case SyncStep::kAutoSync:
      return StartAutomatedSync(manifest, runtime, now);
    case SyncStep::kOperation:
      return FinishOperation(manifest, runtime, now);
    case SyncStep::kProgressing:
      runtime.health_status = std::string(kHealthHealthy);
      runtime.reconciled_at = now;
      return {true, ArmAutoSync(manifest, runtime)};
    case SyncStep::kNone:
      break;
  }
  return {};
}

SyncStepResult ArgoCdSyncModel::OnDrift(const json& manifest, ApplicationRuntime& runtime) const {
  if (runtime.argocd == nullptr || runtime.argocd->step != SyncStep::kNone) {
    return {};
  }
  const SyncPolicy policy = SyncPolicyOf(manifest);
  if (!policy.automated || !policy.self_heal) {
    return {};
  }
  runtime.argocd->step = SyncStep::kAutoSync;
  return {false, settings_.auto_sync_delay};
}

std::optional<std::chrono::milliseconds> ArgoCdSyncModel::ArmAutoSync(
    const json& manifest, ApplicationRuntime& runtime) const {
  ArgoCdSyncState& state = *runtime.argocd;
  if (state.step != SyncStep::kNone || state.compared_key == state.synced_key ||
      !SyncPolicyOf(manifest).automated) {
    return std::nullopt;
  }
  state.step = SyncStep::kAutoSync;
  return settings_.auto_sync_delay;
}

SyncStepResult ArgoCdSyncModel::StartAutomatedSync(const json& manifest,
                                                   ApplicationRuntime& runtime,
                                                   Timestamp now) const {
  const SyncPolicy policy = SyncPolicyOf(manifest);
  const ArgoCdSyncState& state = *runtime.argocd;
  const bool behind = state.compared_key != state.synced_key;
  const bool drifted = !behind && runtime.sync_status == kSyncOutOfSync;
  if (!policy.automated || (!behind && !(drifted && policy.self_heal))) {
    return {};  // turned off meanwhile (RollingSync), or nothing left to sync
  }
  // The operation Argo CD's autoSync writes (controller/appcontroller.go).
  json sync = {{"revision", SimulatedRevision(manifest)}};
  if (policy.prune) {
    sync["prune"] = true;
  }
  if (policy.sync_options.is_array() && !policy.sync_options.empty()) {
    sync["syncOptions"] = policy.sync_options;
  }
  if (drifted) {
    sync["autoHealAttemptsCount"] = HealAttempts(state) + 1;
  }
  json operation = {{"sync", std::move(sync)},
                    {"initiatedBy", {{"automated", true}}},
                    {"retry", policy.retry.is_object() ? policy.retry : json{{"limit", 5}}}};
  return StartOperation(manifest, std::move(operation), runtime, now);
}

SyncStepResult ArgoCdSyncModel::StartOperation(const json& manifest, json operation,
                                               ApplicationRuntime& runtime, Timestamp now) const {
  ArgoCdSyncState& state = *runtime.argocd;
  state.operation = operation.dump();
  runtime.operation_started_at = now;
  runtime.reconciled_at = now;
  state.operation_running = true;
  state.operation_key = state.compared_key;
  state.operation_revision = SimulatedRevision(manifest);
  state.operation_source = std::make_shared<const json>(ApplicationSource(manifest));
  state.step = SyncStep::kOperation;
  return {true, settings_.operation_duration};
}

SyncStepResult ArgoCdSyncModel::FinishOperation(const json& manifest, ApplicationRuntime& runtime,
                                                Timestamp now) const {
  ArgoCdSyncState& state = *runtime.argocd;
  state.operation_running = false;
  state.operation_finished_at = now;
  state.synced_key = state.operation_key;
  state.deployed_revision = state.operation_revision;

  SyncHistoryEntry entry;
  entry.id = state.history.empty() ? 0 : state.history.back().id + 1;
  entry.revision = state.operation_revision;
  entry.source = state.operation_source;
  const json operation = json::parse(state.operation, nullptr, /*allow_exceptions=*/false);
  const json* initiated_by = Child(operation, "initiatedBy");
  if (const json* user = initiated_by != nullptr ? Child(*initiated_by, "username") : nullptr;
      user != nullptr && user->is_string()) {
    entry.initiated_by.username = user->get<std::string>();
  }
  entry.initiated_by.automated = BoolAt(initiated_by, "automated", false);
  entry.deploy_started_at = runtime.operation_started_at;
  entry.deployed_at = now;
  state.history.push_back(std::move(entry));
  const auto limit = static_cast<std::size_t>(HistoryLimit(manifest));
  if (state.history.size() > limit) {
    state.history.erase(state.history.begin(),
                        state.history.end() - static_cast<std::ptrdiff_t>(limit));
  }

  runtime.sync_status =
      std::string(state.compared_key == state.synced_key ? kSyncSynced : kSyncOutOfSync);
  runtime.reconciled_at = now;
  if (settings_.progressing_duration.count() > 0) {
    runtime.health_status = std::string(kHealthProgressing);
    state.step = SyncStep::kProgressing;
    return {true, settings_.progressing_duration};
  }
  runtime.health_status = std::string(kHealthHealthy);
  return {true, ArmAutoSync(manifest, runtime)};
}

}  // namespace mmi::fleet_sim
