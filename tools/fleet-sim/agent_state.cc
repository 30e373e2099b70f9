#include "tools/fleet-sim/agent_state.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "libs/cloudevents/maestro_events.h"
#include "libs/cloudevents/object_meta.h"
#include "libs/cloudevents/resource_id.h"
#include "libs/cloudevents/resync.h"
#include "libs/cloudevents/status_hash.h"
#include "libs/common/log.h"
#include "libs/common/status_macros.h"
#include "libs/kube_object/object.h"
#include "tools/fleet-sim/agent_protocol.h"
#include "tools/fleet-sim/work_status.h"

namespace mmi::fleet_sim {
namespace {

using cloudevents::Event;
using cloudevents::ManifestBundleStatus;
using cloudevents::Timestamp;
using nlohmann::json;
using SteadyTime = std::chrono::steady_clock::time_point;
using kube::StringAt;

const log::Logger& Log() {
  static const log::Logger logger("fleet_sim.agent");
  return logger;
}

}  // namespace

ClusterAgent::ClusterAgent(std::string cluster, AgentSettings settings, const Clock& clock,
                           cloudevents::SequenceIdGenerator& sequence_ids, std::uint64_t seed)
    : cluster_(std::move(cluster)),
      agent_id_(absl::StrCat(cluster_, "-work-agent")),
      settings_(std::move(settings)),
      clock_(clock),
      sequence_ids_(sequence_ids),
      rng_(seed),
      sync_model_(settings_.sync) {}

Timestamp ClusterAgent::Now() const {
  return std::chrono::time_point_cast<std::chrono::nanoseconds>(clock_.Now());
}

std::size_t ClusterAgent::application_count() const {
  std::size_t count = 0;
  for (const auto& [id, work] : works_) {
    for (const json& manifest : work.bundle.manifests) {
      count += IsApplication(manifest) ? 1 : 0;
    }
  }
  return count;
}

std::optional<std::string> ClusterAgent::LastStatusHashForTest(std::string_view resource_id) const {
  auto it = works_.find(resource_id);
  if (it == works_.end()) {
    return std::nullopt;
  }
  return it->second.last_hash;
}

std::optional<SteadyTime> ClusterAgent::NextRefreshForTest(std::string_view resource_id) const {
  auto it = works_.find(resource_id);
  if (it == works_.end()) {
    return std::nullopt;
  }
  return it->second.next_refresh;
}

SteadyTime ClusterAgent::NextRefreshFrom(SteadyTime t) {
  const auto min = std::chrono::duration_cast<std::chrono::milliseconds>(settings_.refresh_min);
  const auto max = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::max(settings_.refresh_max, settings_.refresh_min));
  std::uniform_int_distribution<std::int64_t> jitter(min.count(), max.count());
  return t + std::chrono::milliseconds(jitter(rng_));
}

void ClusterAgent::ScheduleNextTransition(SteadyTime from) {
  if (settings_.transitions_per_minute <= 0.0) {
    next_transition_.reset();
    return;
  }
  std::exponential_distribution<double> gap(settings_.transitions_per_minute / 60.0);
  const double seconds = gap(rng_);
  next_transition_ = from + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                std::chrono::duration<double>(seconds));
}

absl::StatusOr<HandleResult> ClusterAgent::Handle(const Event& event) {
  auto type_or = event.ParsedType();
  if (!type_or.ok()) {
    return Malformed(type_or.status(), "type");
  }
  const cloudevents::EventType& type = *type_or;
  if (type.data_type.ToString() != cloudevents::kManifestBundlesDataType) {
    return HandleResult{Outcome::kIgnored, {}};
  }
  auto cluster = event.ClusterName();
  if (!cluster.ok()) {
    return Malformed(cluster.status(), "clustername");
  }
  const bool for_all = *cluster == "" && type.subresource == cloudevents::Subresource::kStatus;
  if (*cluster != cluster_ && !for_all) {
    return HandleResult{Outcome::kOtherCluster, {}};
  }
  return RunAgentStep<absl::StatusOr<HandleResult>>(
      AgentStepFor(type, event), [&] { return AnswerStatusResync(event); },
      [&] { return Apply(event); }, [&](bool from_resync) { return Delete(event, from_resync); },
      HandleResult{Outcome::kIgnored, {}});
}

absl::StatusOr<HandleResult> ClusterAgent::Apply(const Event& event) {
  ASSIGN_OR_RETURN(const ResourceKey key, ResourceKeyOf(event));
  auto bundle = cloudevents::ManifestBundleOf(event, settings_.limits);
  if (!bundle.ok()) {
    return bundle.status();
  }
  RETURN_IF_ERROR(ValidateBundle(*bundle, settings_.max_bundle_bytes));
  ASSIGN_OR_RETURN(cloudevents::ObjectMeta meta, SpecMetadataOf(event, settings_.limits));

  auto existing = works_.find(key.id);
  if (existing != works_.end()) {
    ++existing->second.specs_received;
    if (key.version != 0 && key.version <= existing->second.version) {
      ++existing->second.duplicate_specs;
    }
    if (key.version != 0 && key.version < existing->second.version) {
      return HandleResult{Outcome::kStale, {}};
    }
  }

  const Timestamp now = Now();
  const SteadyTime mono_now = clock_.MonotonicNow();
  Work fresh;
  Work& work = existing != works_.end() ? existing->second : fresh;
  if (existing == works_.end()) {
    work.id = key.id;
    work.applied_at = now;
    work.specs_received = 1;
  }
  work.version = key.version;
  work.original_source = event.source;
  work.bundle = *std::move(bundle);
  ApplyRuntimes(work, now, mono_now);
  work.next_refresh = NextRefreshFrom(mono_now);

  // The agent-side ManifestWork's metadata (what Go agents put in the `metadata` extension).
  work.name = meta.name;
  ASSIGN_OR_RETURN(work.metadata_json,
                   WorkMetadataJson(std::move(meta), cluster_, work.id, work.version,
                                    work.original_source, work.applied_at));

  Work* stored = &work;
  if (existing == works_.end()) {
    stored = &works_.emplace(work.id, std::move(fresh)).first->second;
  }
  ASSIGN_OR_RETURN(Event reply, StatusEvent(*stored, BuildStatus(*stored),
                                            cloudevents::kStatusUpdateRequestType));
  HandleResult result{Outcome::kApplied, {}};
  result.replies.push_back(std::move(reply));
  return result;
}

void ClusterAgent::ApplyRuntimes(Work& work, Timestamp now, SteadyTime mono_now) {
  work.runtimes.resize(work.bundle.manifests.size());
  for (std::size_t i = 0; i < work.bundle.manifests.size(); ++i) {
    const json& manifest = work.bundle.manifests[i];
    ApplicationRuntime& runtime = work.runtimes[i];
    if (settings_.sync.model == SyncModel::kArgoCd && IsApplication(manifest)) {
      const SyncStepResult step = sync_model_.OnSpec(manifest, runtime, now);
      if (step.next.has_value()) {
        ArmSyncTimer(work, i, *step.next, mono_now);
      }
      continue;
    }
    runtime.reconciled_at = now;  // a new spec makes Argo CD reconcile at once
    if (const json* operation = Child(manifest, "operation");
        operation != nullptr && operation->is_object()) {
      runtime.last_operation = *operation;
      runtime.operation_started_at = now;
      // An explicit sync brings the Application back in sync.
      runtime.sync_status = std::string(kSyncSynced);
      runtime.health_status = std::string(kHealthHealthy);
    }
  }
}

void ClusterAgent::ArmSyncTimer(Work& work, std::size_t index, std::chrono::milliseconds delay,
                                SteadyTime from) {
  ApplicationRuntime& runtime = work.runtimes[index];
  if (runtime.argocd == nullptr) {
    return;
  }
  runtime.argocd->timer = ++last_timer_token_;  // any timer armed before is now stale
  sync_timers_.push(SyncTimer{from + delay, runtime.argocd->timer, work.id, index});
}

absl::StatusOr<HandleResult> ClusterAgent::Delete(const Event& event, bool from_resync) {
  ASSIGN_OR_RETURN(const ResourceKey key, ResourceKeyOf(event));
  auto deletion = event.DeletionTimestamp();
  if (!deletion.ok() && !absl::IsNotFound(deletion.status())) {
    return Malformed(deletion.status(), "deletiontimestamp");
  }
  Work gone;
  auto it = works_.find(key.id);
  if (it != works_.end()) {
    gone = std::move(it->second);
    works_.erase(it);
  } else if (from_resync) {
    // A resync telling us to delete what we do not hold: nothing to do.
    return HandleResult{Outcome::kIgnored, {}};
  } else {
    // Deliberate: a delete for a work this agent never received (e.g. the create was lost
    // while disconnected) is still confirmed, so the source's deletion completes.
    gone.id = key.id;
    gone.version = key.version;
    gone.original_source = event.source;
    auto metadata = event.MetadataJson();
    gone.metadata_json = metadata.ok() ? *metadata : "{}";
    const json parsed = json::parse(gone.metadata_json, nullptr, /*allow_exceptions=*/false);
    gone.name = StringAt(parsed, "name");
  }
  RememberDeleted(gone);
  ManifestBundleStatus status;
  status.conditions.push_back(MakeCondition(
      std::string(cloudevents::kConditionDeleted), /*generation=*/0, Now(), "ManifestsDeleted",
      absl::StrCat("The manifests are deleted from the cluster ", cluster_)));
  ASSIGN_OR_RETURN(Event reply, StatusEvent(gone, status, cloudevents::kStatusUpdateRequestType));
  HandleResult result{Outcome::kDeleted, {}};
  result.replies.push_back(std::move(reply));
  return result;
}

absl::StatusOr<HandleResult> ClusterAgent::AnswerStatusResync(const Event& event) {
  auto hashes =
      cloudevents::DecodeResourceStatusHashList(event.data.value_or(""), settings_.limits);
  if (!hashes.ok()) {
    return Malformed(hashes.status(), "data");
  }
  HandleResult result{Outcome::kStatusResync, {}};
  auto answer = [&](Work& work) -> absl::Status {
    ASSIGN_OR_RETURN(Event reply,
                     StatusEvent(work, BuildStatus(work), cloudevents::kStatusResyncResponseType));
    result.replies.push_back(std::move(reply));
    return absl::OkStatus();
  };
  if (hashes->status_hashes.empty()) {
    for (auto& [id, work] : works_) {
      if (work.original_source == event.source) {
        RETURN_IF_ERROR(answer(work));
      }
    }
    return result;
  }
  for (const auto& entry : hashes->status_hashes) {
    auto it = works_.find(entry.resource_id);
    // Works missing from the list are ignored; unknown IDs wait for the source to delete them.
    if (it == works_.end() || it->second.original_source != event.source) {
      continue;
    }
    ASSIGN_OR_RETURN(const std::string current, cloudevents::StatusHash(BuildStatus(it->second)));
    if (current != entry.status_hash) {
      RETURN_IF_ERROR(answer(it->second));
    }
  }
  return result;
}

ManifestBundleStatus ClusterAgent::BuildStatus(const Work& work) const {
  return BuildWorkStatus(work.bundle, work.version, work.applied_at, work.runtimes);
}

absl::StatusOr<Event> ClusterAgent::StatusEvent(Work& work, const ManifestBundleStatus& status,
                                                std::string_view type) {
  const WorkIdentity identity{
      cluster_, agent_id_, work.id, work.version, work.original_source, work.metadata_json};
  std::string hash;
  ASSIGN_OR_RETURN(Event event, MakeWorkStatusEvent(identity, status,
                                                    type == cloudevents::kStatusResyncResponseType,
                                                    Now(), sequence_ids_, &hash));
  work.last_hash = std::move(hash);
  work.last_status_at = *event.time;
  return event;
}

void ClusterAgent::RememberDeleted(const Work& work) {
  auto [it, inserted] = deleted_.try_emplace(work.id);
  it->second.name = work.name;
  it->second.version = work.version;
  ++it->second.confirmations;
  if (!inserted) {
    return;
  }
  deleted_order_.push_back(work.id);
  if (deleted_order_.size() > kMaxDeletedRemembered) {
    deleted_.erase(deleted_order_.front());
    deleted_order_.pop_front();
  }
}

json ClusterAgent::Snapshot() const {
  auto unix_seconds = [](Timestamp t) {
    return std::chrono::duration<double>(t.time_since_epoch()).count();
  };
  json works = json::array();
  for (const auto& [id, work] : works_) {
    json manifests = json::array();
    json first_app;  // the first Application's runtime, as last reported
    for (std::size_t i = 0; i < work.bundle.manifests.size(); ++i) {
      const json& manifest = work.bundle.manifests[i];
      const json& meta = MetadataOf(manifest);
      const json* spec = Child(manifest, "spec");
      manifests.push_back({{"kind", StringAt(manifest, "kind")},
                           {"name", StringAt(meta, "name")},
                           {"namespace", StringAt(meta, "namespace")},
                           {"spec", spec != nullptr ? *spec : json()}});
      if (first_app.is_null() && IsApplication(manifest) && i < work.runtimes.size()) {
        first_app = {{"sync", work.runtimes[i].sync_status},
                     {"health", work.runtimes[i].health_status},
                     {"revision", SimulatedRevision(manifest)}};
      }
    }
    json entry = {{"id", id},
                  {"version", work.version},
                  {"work", work.name},
                  {"source", work.original_source},
                  {"manifests", std::move(manifests)},
                  {"status_hash", work.last_hash},
                  {"status_at", unix_seconds(work.last_status_at)},
                  {"specs_received", work.specs_received},
                  {"duplicate_specs", work.duplicate_specs}};
    if (!first_app.is_null()) {
      entry.update(first_app);
    }
    works.push_back(std::move(entry));
  }
  json deleted = json::array();
  for (const std::string& id : deleted_order_) {
    const Deleted& d = deleted_.at(id);
    deleted.push_back(
        {{"id", id}, {"work", d.name}, {"version", d.version}, {"confirmations", d.confirmations}});
  }
  return {{"works", std::move(works)}, {"deleted", std::move(deleted)}};
}

Event ClusterAgent::SpecResyncRequest() const {
  cloudevents::ResourceVersionList list;
  for (const auto& [id, work] : works_) {
    list.resource_versions.push_back({id, work.version});
  }
  return AgentSpecResyncRequest(agent_id_, cluster_, list, Now());
}

void ClusterAgent::AppendStatus(Work& work, std::vector<Event>& out) {
  auto event = StatusEvent(work, BuildStatus(work), cloudevents::kStatusUpdateRequestType);
  if (event.ok()) {
    out.push_back(*std::move(event));
    return;
  }
  Log().Warn("cannot build a status event", {{"cluster", cluster_},
                                             {"resource", work.id},
                                             {"error", std::string(event.status().message())}});
}

std::vector<Event> ClusterAgent::Tick(TickCounts* counts, bool postpone_refreshes) {
  TickCounts ignored;
  TickCounts& count = counts != nullptr ? *counts : ignored;
  std::vector<Event> out;
  const SteadyTime mono_now = clock_.MonotonicNow();
  const Timestamp now = Now();

  RunDueSyncSteps(mono_now, now, out, count);

  if (settings_.refresh_max.count() > 0) {
    for (auto& [id, work] : works_) {
      if (work.next_refresh > mono_now) {
        continue;
      }
      work.next_refresh = NextRefreshFrom(mono_now);
      if (postpone_refreshes) {
        ++count.postponed;
        continue;
      }
      for (auto& runtime : work.runtimes) {
        runtime.reconciled_at = now;
      }
      AppendStatus(work, out);
      ++count.refreshes;
    }
  }

  if (settings_.transitions_per_minute > 0.0) {
    RunTransitions(mono_now, now, out, count);
  }
  return out;
}

void ClusterAgent::RunDueSyncSteps(SteadyTime mono_now, Timestamp now, std::vector<Event>& out,
                                   TickCounts& count) {
  while (!sync_timers_.empty() && sync_timers_.top().due <= mono_now) {
    const SyncTimer timer = sync_timers_.top();
    sync_timers_.pop();
    auto it = works_.find(timer.work_id);
    if (it == works_.end()) {
      continue;  // deleted meanwhile
    }
    Work& work = it->second;
    if (timer.index >= work.runtimes.size() || timer.index >= work.bundle.manifests.size()) {
      continue;
    }
    ApplicationRuntime& runtime = work.runtimes[timer.index];
    if (runtime.argocd == nullptr || runtime.argocd->timer != timer.token) {
      continue;  // superseded by a newer timer
    }
    runtime.argocd->timer = 0;
    const SyncStepResult step =
        sync_model_.OnTimer(work.bundle.manifests[timer.index], runtime, now);
    if (step.next.has_value()) {
      ArmSyncTimer(work, timer.index, *step.next, mono_now);
    }
    if (step.changed) {
      // One status per step, so that the source sees Running before Succeeded and
      // Progressing before Healthy even when both fall due in one tick.
      AppendStatus(work, out);
      ++count.sync_steps;
    }
  }
}

void ClusterAgent::RunTransitions(SteadyTime mono_now, Timestamp now, std::vector<Event>& out,
                                  TickCounts& count) {
  if (!next_transition_.has_value()) {
    ScheduleNextTransition(mono_now);
  }
  // Bounded catch-up: after a long stall, skip ahead instead of emitting a burst.
  for (int guard = 0; next_transition_.has_value() && *next_transition_ <= mono_now; ++guard) {
    if (guard >= 1000) {
      ScheduleNextTransition(mono_now);
      break;
    }
    ScheduleNextTransition(*next_transition_);
    // Pick a random Application across this cluster's works (under the argocd sync model, one
    // that is synced to its spec with no step pending: the others are the sync model's).
    std::vector<std::pair<Work*, std::size_t>> apps;
    for (auto& [id, work] : works_) {
      for (std::size_t i = 0; i < work.bundle.manifests.size(); ++i) {
        if (IsApplication(work.bundle.manifests[i]) && i < work.runtimes.size() &&
            ArgoCdSyncModel::Settled(work.runtimes[i])) {
          apps.emplace_back(&work, i);
        }
      }
    }
    if (apps.empty()) {
      continue;
    }
    std::uniform_int_distribution<std::size_t> pick(0, apps.size() - 1);
    auto [work, index] = apps[pick(rng_)];
    ApplicationRuntime& runtime = work->runtimes[index];
    if (runtime.sync_status == kSyncSynced && runtime.health_status == kHealthHealthy) {
      // Drift: out of sync (someone edited live state), a rollout, or a failing rollout.
      std::uniform_int_distribution<int> kind(0, 2);
      switch (kind(rng_)) {
        case 0:
          runtime.sync_status = std::string(kSyncOutOfSync);
          // With selfHeal, the argocd sync model syncs it back.
          if (const SyncStepResult heal =
                  sync_model_.OnDrift(work->bundle.manifests[index], runtime);
              heal.next.has_value()) {
            ArmSyncTimer(*work, index, *heal.next, mono_now);
          }
          break;
        case 1:
          runtime.health_status = std::string(kHealthProgressing);
          break;
        default:
          runtime.health_status = std::string(kHealthDegraded);
          break;
      }
    } else {
      // Self-heal / rollout finished.
      runtime.sync_status = std::string(kSyncSynced);
      runtime.health_status = std::string(kHealthHealthy);
    }
    runtime.reconciled_at = now;
    AppendStatus(*work, out);
    ++count.transitions;
  }
}

}  // namespace mmi::fleet_sim
