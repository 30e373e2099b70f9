// The dispatch state: what the dispatcher last recorded for each resource it sent (resource id ->
// identity, payload hash, version, deletion state) and what is under way for it. Warm-loaded
// from the store on activation; the reconcile loop alone reads and changes it, except the
// "deleting" marks, which the spec resync responder reads from its own threads (IsDeleting).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/node_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "libs/store/dispatch_store.h"
#include "prometheus/gauge.h"
#include "services/dispatcher/apps/propagated_request.h"
#include "services/dispatcher/apps/spec_events.h"

namespace mmi::dispatcher {

// One resource the dispatcher sent (or is about to send), by resource id.
struct TrackedResource {
  ResourceIdentity identity;  // resource id, cluster, work name, hub namespace and name
  std::string hub_uid;
  std::optional<std::string> appset_namespace;
  std::optional<std::string> appset_name;
  std::string payload_hash;
  int32_t version = 0;
  store::DeletionState state = store::DeletionState::kLive;
  bool busy = false;       // a store call or hub write for it is running
  bool requeue = false;    // reconcile its key again when not busy any more
  int unpublished = 0;     // outbox events recorded but not yet accepted by the broker
  bool stripping = false;  // a strip of operation/refresh is running
  std::optional<PropagatedRequest> strip;  // strip once `strip_hash` is published
  std::string strip_hash;
  // The last recorded payload carried an operation/refresh: its hash without them. Once the hub
  // shows exactly that (our strip), nothing is sent: the agent keeps the payload with the request,
  // so a sync still running on the spoke is not cut short (memory only: after a restart the
  // stripped payload is sent, as before).
  std::string request_free_hash;
  // After kAdoptStripped: the hash of the payload the agent still holds (with the request). The
  // work agent skips a payload whose hash it already applied (OCM's config-spec-hash), so the same
  // request written again is preceded by the stripped payload (memory only).
  std::string agent_hash;
  // When the broker last accepted a delete request for it, and how often it was sent again.
  std::optional<std::chrono::steady_clock::time_point> delete_published_at;
  int delete_resends = 0;
  // The end-to-end acknowledgement (ack_check.h): its agent has not acknowledged `version`, so
  // the next decision publishes it again as a new version (memory only: after a restart the
  // check finds it again). How often that happened since its content last changed, and when.
  bool republish = false;
  int ack_republishes = 0;
  // How the recorded bundle delivers the Application (a first step of a hand-over included,
  // handover.h), and the version of a first step the agent acknowledged (AckCheck; memory only:
  // after a restart the check finds it again).
  store::Delivery delivery = store::Delivery::kApplication;
  int32_t handover_acked_version = 0;
  std::optional<std::chrono::steady_clock::time_point> ack_republished_at;

  const std::string& id() const { return identity.resource_id; }
  // "<hub namespace>/<hub name>", the Application key.
  std::string Key() const;
  // The store row of this resource in `state` (no payload: only a create or update sends one).
  store::DispatchedResource Row(store::DeletionState row_state) const;
  // The identity and last recorded state of a store row.
  static TrackedResource FromRow(store::DispatchedResource row);
};

class DispatchState {
 public:
  // `tracked` (mmi_dispatcher_tracked_resources) is borrowed and kept equal to size().
  explicit DispatchState(prometheus::Gauge& tracked) : tracked_gauge_(tracked) {}

  // Loop thread.
  TrackedResource* Find(const std::string& resource_id);
  const TrackedResource* Find(const std::string& resource_id) const;
  TrackedResource* FindByKey(const std::string& key);
  // Adds (or replaces) `resource` under its id and key.
  TrackedResource& Track(TrackedResource resource);
  // Track() of a row read from the store, marked deleting when its deletion is under way.
  TrackedResource& TrackStored(store::DispatchedResource row);
  void Untrack(const std::string& resource_id);
  size_t size() const { return resources_.size(); }
  absl::node_hash_map<std::string, TrackedResource>& resources() { return resources_; }
  const absl::flat_hash_map<std::string, TrackedResource*>& keys() const { return by_key_; }

  // Any thread. Deleting: a deletion of the resource is decided and not finished; recently
  // deleted: finished, until dispatched afresh (pruned after 10 min once over 1,024).
  void MarkDeleting(const std::string& resource_id);
  void UnmarkDeleting(const std::string& resource_id);
  void RememberDeleted(const std::string& resource_id, std::chrono::steady_clock::time_point now);
  void ForgetDeleted(const std::string& resource_id);
  bool IsDeleting(const std::string& resource_id) const;

 private:
  prometheus::Gauge& tracked_gauge_;
  // By resource id. A node map: a slot is a pointer, so the hash table's spare capacity (up to
  // half of it after growing) costs 8 bytes a slot, not a ~480-byte TrackedResource; and the
  // TrackedResource* handed out stay valid while others are added.
  absl::node_hash_map<std::string, TrackedResource> resources_;
  // "<ns>/<name>" -> its resource: a pointer into resources_ (node map: stable until erased),
  // not its id again (~72 bytes less per resource, one lookup less per FindByKey).
  absl::flat_hash_map<std::string, TrackedResource*> by_key_;
  mutable absl::Mutex mu_;
  absl::flat_hash_set<std::string> deleting_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, std::chrono::steady_clock::time_point> recently_deleted_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace mmi::dispatcher
