// The OCM work agent of one real spoke (fleet-sim's apply mode, README "Real spokes"): applies
// each received ManifestBundle to the spoke's API server as the work agent does and reports
// status from the live objects. The protocol side (resource versions and stale specs, the
// agent-side metadata, `sequenceid`, `statushash`, spec and status resync) is that of the
// simulated agents (agent_state.h); what is applied comes from PlanBundle (apply_plan.h) and
// what is reported from BuildSpokeStatus (spoke_status.h).
//
//   spec create/update  write each manifest (server-side apply with the bundle's field manager,
//                       Update (create, or update when it differs, keeping the labels and
//                       annotations others set) or CreateOnly; ReadOnly only reads), delete the
//                       objects an update dropped, answer with the status
//   spec delete         delete what the delete option does not orphan (Foreground unless the
//                       settings say otherwise, with the object's uid as precondition), report
//                       Deleting; Deleted=True only once every such object is gone (ObjectChanged
//                       or Resync sees it), then forget the work
//   ObjectChanged       a watched object changed: report the work's status if its hash changed
//   Resync              re-read every object (the agent's periodic status sync): report changed
//                       statuses, complete deletions
//
// Blocking: calls the KubeClient. Thread-compatible: one owner thread (SpokeAgentRunner's
// worker) calls everything. The client, clock and generator are borrowed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "libs/cloudevents/codec_options.h"
#include "libs/cloudevents/event.h"
#include "libs/cloudevents/manifest_bundle.h"
#include "libs/cloudevents/sequence_id.h"
#include "libs/common/clock.h"
#include "libs/kube/kube_client.h"
#include "nlohmann/json.hpp"
#include "tools/fleet-sim/apply_plan.h"
#include "tools/fleet-sim/spoke_status.h"

namespace mmi::fleet_sim {

struct SpokeAgentSettings {
  // The agent's bundle limit (§6.3 step 4): total manifest bytes per work.
  std::size_t max_bundle_bytes = std::size_t{500} * 1024;
  cloudevents::CodecLimits limits;
  // The deletes' propagationPolicy: Foreground, as the work agent deletes. Background for an API
  // server without a garbage collector (tests/peers/bin/start-kube runs no controllers), where
  // the foregroundDeletion finalizer would hold every object forever.
  kube::PropagationPolicy delete_propagation = kube::PropagationPolicy::kForeground;
};

class SpokeWorkAgent {
 public:
  SpokeWorkAgent(std::string cluster, SpokeAgentSettings settings, kube::KubeClient& client,
                 const Clock& clock, cloudevents::SequenceIdGenerator& sequence_ids);

  const std::string& cluster() const { return cluster_; }

  // Handles one event addressed to this cluster (or a status resync request for every cluster).
  // Returns the events to publish. kInvalidArgument when it is malformed or its bundle cannot be
  // planned; the held state is then unchanged. API errors do not fail it: they show in the
  // status (Applied=False with the error).
  absl::StatusOr<std::vector<cloudevents::Event>> Handle(const cloudevents::Event& event);

  // A watch saw `object` (of collection `ref`) change, or go (`deleted`).
  std::vector<cloudevents::Event> ObjectChanged(const kube::ResourceRef& ref,
                                                const nlohmann::json& object, bool deleted);

  // Re-reads every held object; reports what changed and completes deletions.
  std::vector<cloudevents::Event> Resync();

  // The `spec.resync_request` sent on every (re)connect (§6.5).
  cloudevents::Event SpecResyncRequest() const;

  // The collections (with namespace) the held works' objects live in: what to watch.
  std::vector<kube::ResourceRef> WatchedCollections() const;

  std::size_t work_count() const { return works_.size(); }

 private:
  struct Work {
    std::string id;
    std::int32_t version = 0;
    std::string original_source;
    std::string metadata_json;
    cloudevents::Timestamp applied_at{};
    ApplyPlan plan;
    std::vector<ManifestObservation> observed;  // one per manifest
    cloudevents::ManifestBundleStatus last_status;
    std::string last_hash;
    bool deleting = false;
  };

  absl::StatusOr<std::vector<cloudevents::Event>> Apply(const cloudevents::Event& event);
  absl::StatusOr<std::vector<cloudevents::Event>> Delete(const cloudevents::Event& event,
                                                         bool from_resync);
  absl::StatusOr<std::vector<cloudevents::Event>> AnswerStatusResync(
      const cloudevents::Event& event);

  // Writes one manifest as its plan says; the live object afterwards.
  absl::StatusOr<nlohmann::json> Write(const ManifestPlan& plan);
  // Reads the manifest's object: the object, nullopt when absent, or the read error.
  absl::StatusOr<std::optional<nlohmann::json>> Read(const ManifestPlan& plan);
  // Deletes the objects of `old_plan` that `new_plan` no longer holds.
  void DeleteDropped(const ApplyPlan& old_plan, const ApplyPlan& new_plan);
  // Deletes what the delete option does not orphan (gone already counts as deleted).
  void DeleteObjects(const Work& work);
  // True when none of the work's non-orphaned objects is live.
  static bool Gone(const Work& work);

  cloudevents::ManifestBundleStatus BuildStatus(const Work& work, bool deleted) const;
  // A status event for `work`; remembers the status and its hash.
  absl::StatusOr<cloudevents::Event> StatusEvent(Work& work, bool deleted, bool resync_response);
  // Appends a status event of `work` when its status hash differs from the last one sent.
  void AppendIfChanged(Work& work, std::vector<cloudevents::Event>& out);
  // Appends the Deleted status of `id` and forgets it.
  void Complete(std::map<std::string, Work, std::less<>>::iterator it,
                std::vector<cloudevents::Event>& out);
  cloudevents::Timestamp Now() const;

  const std::string cluster_;
  const std::string agent_id_;
  const SpokeAgentSettings settings_;
  kube::KubeClient& client_;
  const Clock& clock_;
  cloudevents::SequenceIdGenerator& sequence_ids_;
  std::map<std::string, Work, std::less<>> works_;  // by resource ID
};

}  // namespace mmi::fleet_sim
