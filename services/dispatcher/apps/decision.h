// Decide(): what the reconciler does for one Application key, as a pure function of what it
// sees (the cached Application, what is tracked for it, which ManagedClusters exist, the time).
// The reconciler's DecisionApplier carries the decision out: that is where the store, the outbox
// and the hub are touched. Pure: no I/O, no clock, no randomness; thread-compatible. It includes
// only pure headers (no hub client, no informer).
//
// Decisions (per Application key "<namespace>/<name>"):
//  * a store call or hub write for its resource is running: decide again once it is done;
//  * not pull model (label + cluster annotation, hub-apis §5.2): left alone;
//  * target ManagedCluster is the hub itself (local-cluster by name or label): skipped;
//  * target ManagedCluster unknown: parked (reported and retried by the reconciler);
//  * payload hash equal to the last recorded one: nothing is sent, only a propagated
//    operation/refresh still on the hub is removed, unless the resource is marked for a
//    republish (its agent never acknowledged it: ack_check.h), which is an update; otherwise a
//    create (first time) or update;
//  * deletionTimestamp, the Application vanished, or its cluster changed: a delete request (sent
//    again past its resend delay until confirmed); once confirmed the deletion is finished
//    (finalizer released, row forgotten).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "libs/cloudevents/event.h"
#include "nlohmann/json.hpp"
#include "services/dispatcher/apps/cluster_directory.h"
#include "services/dispatcher/apps/dispatch_state.h"
#include "services/dispatcher/apps/payload.h"
#include "services/dispatcher/apps/reconciler_settings.h"

namespace mmi::dispatcher {

// What Decide() looks at for one key.
struct Observation {
  std::string key;                             // "<namespace>/<name>"
  const nlohmann::json* app = nullptr;         // the cached Application; nullptr: not on the hub
  const TrackedResource* tracked = nullptr;    // what was recorded for this key, if anything
  const DispatchState* state = nullptr;        // every tracked resource (same work name elsewhere)
  const ClusterDirectory* clusters = nullptr;  // which ManagedClusters exist
  std::chrono::steady_clock::time_point now;   // monotonic
  // Manifest delivery: the dispatch of the Application's last good render (ManifestDelivery),
  // sent in place of the one BuildDispatch() makes; nullptr: Application delivery.
  const Dispatch* prepared = nullptr;
};

struct Decision {
  enum class Action {
    kNothing,           // nothing to record or write (`reason` says why, when counted)
    kWaitWhileBusy,     // its resource has a store call or hub write running: decide again after
    kPublishSpec,       // record and publish a create or update of `dispatch`
    kRequestDelete,     // record and publish a delete request (`resend`: sent again)
    kFinishDeletion,    // the agent confirmed: release the finalizer, forget the resource
    kReleaseFinalizer,  // deleting an Application never dispatched: release its finalizer
    kStripRequest,      // unchanged, but its propagated operation/refresh is still on the hub
    kAdoptStripped,     // the hub only lost the request we stripped: nothing is sent (the agent's
                        // payload keeps it, so its sync runs on); `adopted_hash` is tracked
    kPark,              // its ManagedCluster is unknown: park, report, retry
  };
  Action action = Action::kNothing;
  // mmi_dispatcher_decisions_total{decision} counted for kNothing / kStripRequest ("" none).
  std::string_view reason;
  std::string why;       // for the log, when something is refused ("invalid")
  bool unpark = false;   // the key is not (or no longer) waiting for its cluster
  bool requeue = false;  // decide the key again once its tracked resource is idle (or gone)

  std::optional<Dispatch> dispatch;  // kPublishSpec
  bool create = false;               // kPublishSpec: first dispatch (version 1)
  bool republish = false;            // kPublishSpec: unchanged, but never acknowledged
  int32_t version = 0;               // kPublishSpec: our counter (the wire may say 0)
  // kRequestDelete: the Application's deletionTimestamp; nullopt: now (it vanished).
  std::optional<cloudevents::Timestamp> deletion_time;
  bool resend = false;        // kRequestDelete
  std::string cluster;        // kPark, skipped_local_cluster: the target cluster
  std::string conflict_with;  // "invalid": the key that already has this work name
  std::string adopted_hash;   // kAdoptStripped: the payload hash now tracked
  // kPublishSpec of a manifest bundle: its manifest_renders row, recorded with it (set by the
  // reconciler from its ManifestPlan, not by Decide()).
  std::optional<store::ManifestRender> manifest_render;
  // kPublishSpec: how `dispatch` delivers the Application (set by the reconciler with the
  // hand-over between the modes, handover.h; Decide() leaves Application delivery).
  store::Delivery delivery = store::Delivery::kApplication;
};

Decision Decide(const Observation& seen, const ReconcilerSettings& settings);

// How long an unconfirmed delete request waits before it is sent again after `resends` resends
// (delete_resend_after doubled per resend, up to 16x).
std::chrono::milliseconds DeleteResendDelay(const ReconcilerSettings& settings, int resends);

// The Application's metadata.deletionTimestamp, when set.
std::optional<std::string> DeletionTimestampOf(const nlohmann::json& app);

}  // namespace mmi::dispatcher
