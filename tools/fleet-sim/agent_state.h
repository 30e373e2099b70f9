// The agent side of the Maestro / OCM work protocol for simulated managed clusters
// (../shared/spec/maestro-protocol.md §1, §2, §6.1-§6.6), as pure state machines: no network, no
// threads, time from an injected Clock.
//
// `ClusterAgent` is one cluster's work agent: it stores the ManifestBundles it receives, answers
// every applied spec with a `status.update_request` (Applied/Available conditions, per-manifest
// resource status and the Argo CD Application `.status` as JsonRaw status feedback, `statushash`
// as the Go agent computes it, a snowflake `sequenceid`), answers deletes with `Deleted=True`,
// answers status resync requests with the statuses whose hash differs, builds the spec resync
// request sent on (re)connect, and churns: each Application's `reconciledAt` is bumped every
// refresh interval (jittered per Application) and sync/health transitions happen at a configured
// rate, each producing a status update. Under the argocd sync model (sync_model.h) an applied
// spec may arm per-Application timers; their steps (auto-sync, Running -> Succeeded,
// Progressing -> Healthy) are reported by later Ticks.
// Its statuses are built by work_status.h; `Fleet` (fleet.h) routes events to the agents.
//
// Thread-compatible: one owner thread (the simulator loop) calls everything.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "libs/cloudevents/codec_options.h"
#include "libs/cloudevents/event.h"
#include "libs/cloudevents/manifest_bundle.h"
#include "libs/cloudevents/sequence_id.h"
#include "libs/common/clock.h"
#include "nlohmann/json.hpp"
#include "tools/fleet-sim/application_status.h"
#include "tools/fleet-sim/fleet_metrics.h"
#include "tools/fleet-sim/sync_model.h"
#include "tools/fleet-sim/work_status.h"  // kOriginalSourceLabel

namespace mmi::fleet_sim {

struct AgentSettings {
  // Each Application's `reconciledAt` is bumped after a delay drawn uniformly from
  // [refresh_min, refresh_max] (Argo CD's default 180 s resync with jitter). refresh_max = 0
  // turns refresh churn off.
  std::chrono::seconds refresh_min{120};
  std::chrono::seconds refresh_max{180};
  // Sync/health transitions per minute for this one cluster (a Poisson process over its
  // Applications). 0 = none.
  double transitions_per_minute = 0.0;
  // The agent's bundle limit (§6.3 step 4): total manifest bytes per work.
  std::size_t max_bundle_bytes = std::size_t{500} * 1024;
  cloudevents::CodecLimits limits;
  // How the Applications sync (sync_model.h): `instant` (default) reports each spec as synced
  // at once; `argocd` follows each Application's sync policy, its steps due on later Ticks.
  SyncModelSettings sync;
};

// What handling one received event amounted to (for metrics and tests).
enum class Outcome {
  kApplied,       // spec create/update/resync_response applied; a status follows
  kDeleted,       // spec delete; a Deleted status follows
  kStale,         // spec with a resourceversion lower than the one held: ignored (§6.1)
  kStatusResync,  // status resync request answered (possibly with nothing)
  kOtherCluster,  // `clustername` is not this cluster: ignored
  kIgnored,       // an event an agent does not act on (e.g. delete of an unknown work)
};

struct HandleResult {
  Outcome outcome = Outcome::kIgnored;
  std::vector<cloudevents::Event> replies;  // events to publish, in order
};

class ClusterAgent {
 public:
  // `clock` and `sequence_ids` are borrowed and must outlive the agent. `seed` makes churn
  // reproducible.
  ClusterAgent(std::string cluster, AgentSettings settings, const Clock& clock,
               cloudevents::SequenceIdGenerator& sequence_ids, std::uint64_t seed);

  const std::string& cluster() const { return cluster_; }
  // The CloudEvent `source` of this agent's events: `<cluster>-work-agent`.
  const std::string& agent_id() const { return agent_id_; }

  // Handles one event from a source. kInvalidArgument when it is malformed (missing or bad
  // extensions, undecodable or invalid bundle, bad resync payload); the agent's state is then
  // unchanged.
  absl::StatusOr<HandleResult> Handle(const cloudevents::Event& event);

  // The `spec.resync_request` sent on every (re)connect (§6.5): every held work's ID and
  // version, `originalsource` "" (all sources).
  cloudevents::Event SpecResyncRequest() const;

  // What a Tick did.
  struct TickCounts {
    int refreshes = 0;
    int transitions = 0;
    int postponed = 0;   // due refreshes rescheduled without a status (postpone_refreshes)
    int sync_steps = 0;  // sync model steps reported (argocd: Running, Succeeded, Healthy)
  };
  // Status updates for what is due at the clock's current time: the sync model's steps (one
  // status each, only Applications with a step pending cost anything), then the churn
  // (refreshes, transitions).
  // With `postpone_refreshes` a due refresh is rescheduled one interval later without a status
  // (an agent busy applying specs re-reports unchanged Applications later, as an overloaded
  // Argo CD reconciles less often); transitions are still reported.
  std::vector<cloudevents::Event> Tick(TickCounts* counts = nullptr,
                                       bool postpone_refreshes = false);

  std::size_t work_count() const { return works_.size(); }
  std::size_t application_count() const;

  // What this agent holds and last reported, as ground truth for a test harness comparing it
  // with the hub (tests/fault):
  //   {"works": [{"id", "version", "work" (ManifestWork name), "source",
  //               "manifests": [{"kind", "name", "namespace", "spec"}],
  //               "status_hash", "status_at" (Unix seconds of the last status sent),
  //               "sync", "health", "revision" (of the first Application, as last reported),
  //               "specs_received", "duplicate_specs"}, ...],
  //    "deleted": [{"id", "work", "version", "confirmations"}, ...]}
  // `specs_received` counts the spec events applied or ignored as stale for the work since it
  // was created on this agent; `duplicate_specs` those whose resourceversion was not higher than
  // the one held (a re-delivery, or an older spec). `deleted` lists the works whose deletion
  // this agent confirmed (Deleted=True sent), the last kMaxDeletedRemembered of them.
  nlohmann::json Snapshot() const;
  static constexpr std::size_t kMaxDeletedRemembered = 10'000;
  // The statushash last sent for `resource_id`, if the work is held.
  std::optional<std::string> LastStatusHashForTest(std::string_view resource_id) const;
  // When the next refresh of `resource_id` is due (monotonic), if the work is held.
  std::optional<std::chrono::steady_clock::time_point> NextRefreshForTest(
      std::string_view resource_id) const;

 private:
  struct Work {
    std::string id;
    std::int32_t version = 0;
    std::string original_source;
    cloudevents::ManifestBundle bundle;
    std::string metadata_json;  // agent-side ManifestWork ObjectMeta, as sent on status events
    cloudevents::Timestamp applied_at{};
    std::vector<ApplicationRuntime> runtimes;  // one per manifest
    std::string last_hash;
    std::chrono::steady_clock::time_point next_refresh{};
    std::string name;  // the ManifestWork name (`metadata` extension), "" when not sent
    cloudevents::Timestamp last_status_at{};
    std::int64_t specs_received = 0;
    std::int64_t duplicate_specs = 0;
  };
  struct Deleted {
    std::string name;
    std::int32_t version = 0;
    std::int64_t confirmations = 0;
  };

  void RememberDeleted(const Work& work);

  absl::StatusOr<HandleResult> Apply(const cloudevents::Event& event);
  absl::StatusOr<HandleResult> Delete(const cloudevents::Event& event, bool from_resync);
  absl::StatusOr<HandleResult> AnswerStatusResync(const cloudevents::Event& event);

  // A sync model timer: step `token` of the Application at `index` of work `work_id` is due.
  // Stale timers (the work gone, a newer timer armed) are skipped when they come due.
  struct SyncTimer {
    std::chrono::steady_clock::time_point due;
    std::uint64_t token = 0;
    std::string work_id;
    std::size_t index = 0;
    bool operator>(const SyncTimer& other) const {
      return due != other.due ? due > other.due : token > other.token;
    }
  };

  // Updates each manifest's runtime for the spec just stored in `work`; arms sync model timers.
  void ApplyRuntimes(Work& work, cloudevents::Timestamp now,
                     std::chrono::steady_clock::time_point mono_now);
  void ArmSyncTimer(Work& work, std::size_t index, std::chrono::milliseconds delay,
                    std::chrono::steady_clock::time_point from);
  void RunDueSyncSteps(std::chrono::steady_clock::time_point mono_now, cloudevents::Timestamp now,
                       std::vector<cloudevents::Event>& out, TickCounts& count);
  void RunTransitions(std::chrono::steady_clock::time_point mono_now, cloudevents::Timestamp now,
                      std::vector<cloudevents::Event>& out, TickCounts& count);
  // Appends a status update of `work` to `out` (logged and skipped if it cannot be built).
  void AppendStatus(Work& work, std::vector<cloudevents::Event>& out);

  cloudevents::ManifestBundleStatus BuildStatus(const Work& work) const;
  // A status event for `work` carrying `status`; remembers its hash in the work.
  absl::StatusOr<cloudevents::Event> StatusEvent(Work& work,
                                                 const cloudevents::ManifestBundleStatus& status,
                                                 std::string_view type);
  cloudevents::Timestamp Now() const;
  std::chrono::steady_clock::time_point NextRefreshFrom(std::chrono::steady_clock::time_point t);
  void ScheduleNextTransition(std::chrono::steady_clock::time_point from);

  const std::string cluster_;
  const std::string agent_id_;
  const AgentSettings settings_;
  const Clock& clock_;
  cloudevents::SequenceIdGenerator& sequence_ids_;
  std::mt19937_64 rng_;
  std::map<std::string, Work, std::less<>> works_;  // by resource ID; ordered for determinism
  std::optional<std::chrono::steady_clock::time_point> next_transition_;
  const ArgoCdSyncModel sync_model_;
  // Armed sync model timers, earliest first (argocd model only; empty otherwise).
  std::priority_queue<SyncTimer, std::vector<SyncTimer>, std::greater<>> sync_timers_;
  std::uint64_t last_timer_token_ = 0;
  // Confirmed deletions by resource ID, and their IDs oldest first (for the bound).
  std::map<std::string, Deleted, std::less<>> deleted_;
  std::deque<std::string> deleted_order_;
};

}  // namespace mmi::fleet_sim
