// The dispatcher's durable state: one row per dispatched resource (what was last sent to which
// cluster) and an outbox of events accepted from the hub but not yet accepted by the broker.
//
// The reconcile loop records a change (resource row + outbox event) in one transaction *before*
// publishing, so a crash between the hub and the broker loses nothing: on restart the outbox is
// published again (receivers are idempotent by CloudEvent id). Payload hashes let a restarted
// dispatcher skip everything unchanged.
//
// Thread safety: implementations are thread-safe, but calls block on I/O: call them from a worker
// pool, never from a loop thread. Errors: kUnavailable / kAborted are retryable; kInternal is a
// bug in our SQL; kInvalidArgument for a malformed row.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace mmi::store {

enum class DeletionState : int16_t { kLive = 0, kDeleteRequested = 1, kDeleteConfirmed = 2 };

// How the bundle last recorded for a resource delivers its Application (ADR 0007), including the
// first step of a hand-over between the two ways, which must be acknowledged by the agent
// (AcknowledgedHandovers) before the second step goes:
//  * kReleasingApplication: the spoke Application without Argo CD's resources finalizer, so the
//    manifest bundle that replaces it deletes it without a prune;
//  * kOrphaningManifests: the manifests with the delete option `Orphan`, so the agent drops its
//    owner references and the Application bundle that replaces them deletes none of them.
enum class Delivery : int16_t {
  kApplication = 0,
  kManifests = 1,
  kReleasingApplication = 2,
  kOrphaningManifests = 3,
};
std::string_view DeliveryName(Delivery delivery);

struct DispatchedResource {
  std::string resource_id;  // UUID, lower case
  std::string cluster;
  std::string hub_namespace;
  std::string hub_name;
  std::string hub_uid;
  std::string work_name;
  std::optional<std::string> appset_namespace;
  std::optional<std::string> appset_name;
  int32_t version = 0;       // resourceversion last sent
  std::string payload_hash;  // hex SHA-256
  std::string payload;       // ManifestBundle JSON last sent
  std::string metadata;      // `metadata` extension JSON last sent ("" = none)
  std::optional<std::chrono::system_clock::time_point> last_published_at;
  DeletionState deletion_state = DeletionState::kLive;
  Delivery delivery = Delivery::kApplication;  // what `payload` delivers (migration 0005)
  friend bool operator==(const DispatchedResource&, const DispatchedResource&) = default;
};

enum class OutboxAction { kCreate, kUpdate, kDelete };
std::string_view OutboxActionName(OutboxAction action);  // "create" | "update" | "delete"

struct OutboxEntry {
  int64_t seq = 0;  // assigned by the store; ascending in recording order
  std::string resource_id;
  std::string cluster;
  OutboxAction action = OutboxAction::kCreate;
  int32_t version = 0;
  std::string payload_hash;
  std::string event;  // the CloudEvent in structured JSON
  int32_t attempts = 0;
  friend bool operator==(const OutboxEntry&, const OutboxEntry&) = default;
};

// A resource delivered as rendered manifests (one `manifest_renders` row, migrations/0003; ADR
// 0007): the row exists exactly for the resources in manifest delivery, which is how the status
// sink knows the mode. What it holds besides the bundle is what the sink shows on the hub.
struct ManifestRender {
  std::string resource_id;  // UUID, lower case: the dispatched resource
  std::string revision;     // the resolved revision of the manifests last sent
  std::string source_type;  // Helm | Kustomize | Directory | Plugin | ""
  // The latest render's error (the last good bundle stays on the spoke); nullopt when it
  // succeeded.
  std::optional<std::string> render_error;
  friend bool operator==(const ManifestRender&, const ManifestRender&) = default;
};

// One change taken from the hub: the new state of a resource and the event that carries it.
struct DispatchChange {
  DispatchedResource resource;
  OutboxEntry event;  // seq ignored on input
  // Set for a bundle of rendered manifests: its `manifest_renders` row, upserted (and notified
  // on kManifestRenderChannel) in the same transaction as the resource row. Unset on a create or
  // update: the resource is delivered as an Application (again), so a `manifest_renders` row it
  // had from manifest delivery is removed in the same transaction, and its removal notified on
  // kManifestRenderChannel (the sink maps its status as an Application's from then on). A
  // delete request keeps the row: the deletion's status is still that of the manifests.
  std::optional<ManifestRender> manifest_render;
};

// What deciding one hub Application needs: its resource rows (normally one; one per cluster
// while it moves between clusters) without payload and metadata, and their outbox events not yet
// accepted by the broker, ascending seq.
struct ApplicationRows {
  std::vector<DispatchedResource> resources;
  std::vector<OutboxEntry> outbox;
};

// An Application by its hub namespace and name.
struct HubKey {
  std::string hub_namespace;
  std::string hub_name;
};

// A live resource in Application delivery (a manifest bundle carries no stamp yet) whose agent
// has not acknowledged the version last dispatched, although its
// cluster's agent is reporting (the end-to-end acknowledgement: the sink saves the version each
// status reports it applied in `resource_status.acked_version`; docs/reliability.md finding 6).
struct UnacknowledgedResource {
  std::string resource_id;
  int32_t version = 0;                   // dispatched
  std::optional<int32_t> acked_version;  // reported applied; nullopt = none yet
  // When the broker accepted `version` (last_published_at).
  std::chrono::system_clock::time_point published_at;
  // Listed because a change of its cluster published at least AckWindow::grace later is
  // acknowledged; false: only because its agent reported AckWindow::timeout after it.
  bool overtaken = false;
  friend bool operator==(const UnacknowledgedResource&, const UnacknowledgedResource&) = default;
};

// A live resource in the first step of a hand-over (Delivery kReleasingApplication or
// kOrphaningManifests) whose agent acknowledged the version last dispatched: the second step
// may go.
struct AcknowledgedHandover {
  std::string resource_id;
  int32_t version = 0;  // dispatched and acknowledged
  Delivery delivery = Delivery::kApplication;
  friend bool operator==(const AcknowledgedHandover&, const AcknowledgedHandover&) = default;
};

// When a missing acknowledgement counts. For a resource B of cluster C published at t (the broker
// accepted it, nothing for it is pending in the outbox), B counts when
//  * a resource of C published at least `grace` after t is acknowledged (the agent applied a
//    later change, so B's was lost on the way or reverted: `overtaken`), or
//  * C's agent reported anything at least `timeout` after t (it is alive but has not applied B:
//    lost, or still queued in a source that is behind; the caller tells them apart with
//    AckSnapshot's frontier).
struct AckWindow {
  std::chrono::seconds grace{30};
  std::chrono::seconds timeout{120};
  int limit = 1000;  // at most this many: the overtaken first, then the longest published
};

// One look-up of the end-to-end acknowledgement, from one snapshot.
struct AckSnapshot {
  std::vector<UnacknowledgedResource> resources;
  // How far the acknowledgements have come, over every cluster: the latest last_published_at of
  // a live resource whose agent acknowledged its version (nullopt: none), and how many live
  // resources are acknowledged. A source that delivers in order and is behind moves these while
  // it works through its queue; a source that lost events, or delivers nothing, does not.
  std::optional<std::chrono::system_clock::time_point> acked_frontier;
  int64_t acknowledged = 0;
  friend bool operator==(const AckSnapshot&, const AckSnapshot&) = default;
};

// Told, after every store call, which operation it was, how long it took and whether it
// succeeded (the dispatcher's mmi_store_* metrics). Called on the calling thread; must not call
// the store.
using StoreCallObserver =
    std::function<void(std::string_view operation, std::chrono::nanoseconds elapsed, bool ok)>;

class DispatchStore {
 public:
  virtual ~DispatchStore() = default;

  // Calls `fn` for every resource row, in no particular order (start-up warm load), without its
  // payload and metadata (both empty): the warm load keeps the hash, and 300,000 payloads are
  // ~1 GB to read and hold.
  virtual absl::Status ForEachResource(
      const std::function<void(const DispatchedResource&)>& fn) = 0;
  // Whether any resource row exists: false for a first install (nothing was ever dispatched, or
  // every row was forgotten).
  virtual absl::StatusOr<bool> HasResources() = 0;
  virtual absl::StatusOr<std::optional<DispatchedResource>> GetResource(
      const std::string& resource_id) = 0;
  // The rows of the Applications in `keys`, and the rows with the ids in `resource_ids` (what
  // those Applications would be dispatched as now: another Application may hold that id, as two
  // keys can name one work), each once, ascending id; and their pending outbox events, ascending
  // seq; in one snapshot. A restarted dispatcher decides changed Applications with these while
  // ForEachResource still runs. Unknown keys and ids contribute nothing. A few hundred per call.
  virtual absl::StatusOr<ApplicationRows> LoadApplications(
      const std::vector<HubKey>& keys, const std::vector<std::string>& resource_ids) = 0;
  // Every live or deleting resource of one cluster (answers an agent's spec resync request).
  virtual absl::StatusOr<std::vector<DispatchedResource>> ResourcesOfCluster(
      const std::string& cluster) = 0;

  // Atomically upserts every resource row and appends every event to the outbox (in order).
  // Returns the assigned outbox seqs, in the order of `changes`.
  virtual absl::StatusOr<std::vector<int64_t>> Record(
      const std::vector<DispatchChange>& changes) = 0;

  // Up to `limit` outbox entries with seq > `after_seq`, ascending.
  virtual absl::StatusOr<std::vector<OutboxEntry>> PendingOutbox(int64_t after_seq, int limit) = 0;
  // The broker accepted these entries: removes them and stamps their resources' last_published_at.
  virtual absl::Status MarkPublished(const std::vector<int64_t>& seqs,
                                     std::chrono::system_clock::time_point at) = 0;
  // Counts a failed attempt on one entry (kept for the next try).
  virtual absl::Status RecordPublishFailure(int64_t seq, const std::string& error) = 0;

  // The agent confirmed the deletion (Deleted condition): sets the resource's deletion state to
  // kDeleteConfirmed and, with the same commit, notifies kDeletionConfirmedChannel with the
  // resource id, as StatusStore::MarkDeletionConfirmed does. Only for a resource being deleted:
  // a live one stays live (a late Deleted report must not end a re-created resource).
  // Idempotent. True when the resource is (now) confirmed deleted; false (and nothing done) when
  // it is unknown or live.
  virtual absl::StatusOr<bool> MarkDeletionConfirmed(const std::string& resource_id) = 0;
  // The ids of every resource in state kDeleteConfirmed, ascending: the sweep a listener of
  // kDeletionConfirmedChannel runs after (re)subscribing, for confirmations sent while nobody
  // listened (notifications are not queued).
  virtual absl::StatusOr<std::vector<std::string>> ConfirmedDeletions() = 0;
  // Removes the resource row (and its `manifest_renders` row) once the hub side is cleaned up
  // (finalizer released).
  virtual absl::Status Forget(const std::string& resource_id) = 0;

  // Upserts the `manifest_renders` row of a resource whose bundle did not change (a new
  // revision rendering the same output, a render error, its clearing) and, with the same commit,
  // notifies kManifestRenderChannel with the resource id. kInvalidArgument when resource_id is
  // empty.
  virtual absl::Status PutManifestRender(const ManifestRender& render) = 0;
  // The `manifest_renders` row of a resource; nullopt when it is not in manifest delivery.
  virtual absl::StatusOr<std::optional<ManifestRender>> GetManifestRender(
      const std::string& resource_id) = 0;

  // The live resources whose dispatched version is not acknowledged under `window` (see
  // AckWindow; the overtaken first, then the longest published), and the acknowledgements'
  // progress. Reads the sink's `resource_status`; one statement.
  virtual absl::StatusOr<AckSnapshot> UnacknowledgedResources(const AckWindow& window) = 0;
  // The live resources in the first step of a hand-over whose `resource_status.acked_version`
  // (the sink's) is at least the version dispatched, ascending id, at most `limit`; one
  // statement, on the same acknowledgements as UnacknowledgedResources.
  virtual absl::StatusOr<std::vector<AcknowledgedHandover>> AcknowledgedHandovers(int limit) = 0;
};

// The channel both stores' MarkDeletionConfirmed notify (payload: the resource id).
inline constexpr char kDeletionConfirmedChannel[] = "mmi_deletion_confirmed";
// The channel every write of a `manifest_renders` row notifies (payload: the resource id): the
// status sink asks the agent again and rewrites the Application's status.
inline constexpr char kManifestRenderChannel[] = "mmi_manifest_render";

}  // namespace mmi::store
