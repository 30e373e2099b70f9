// The status sink's durable state: which hub Application a Maestro resource belongs to (read from
// the dispatcher's `dispatched_resources`), the last status applied per resource
// (`resource_status`, migrations/0002) so a restart resumes without rewriting unchanged statuses,
// the hand-off of completed deletions to the dispatcher, and per-ApplicationSet counts.
//
// Thread safety: implementations are thread-safe, but calls block on I/O: call them from a worker
// pool, never from a loop thread. Errors: kUnavailable / kAborted are retryable; kInternal is a
// bug in our SQL; kInvalidArgument for a malformed row or argument.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "libs/store/dispatch_store.h"

namespace mmi::store {

// A resource in manifest delivery (a `manifest_renders` row, migrations/0003, whose presence is
// the mode) with what the sink needs of its bundle besides the manifests: those are the
// dispatched payload, shared by every cluster of one render, so they are read apart
// (LookupPayloads) and only for a payload hash the sink has not seen.
struct ManifestRenderRef {
  std::string revision;                     // of the manifests last sent
  std::string source_type;                  // Helm | Kustomize | Directory | Plugin | ""
  std::optional<std::string> render_error;  // of the latest render; nullopt when it succeeded
  std::string payload_hash;                 // dispatched_resources.payload_hash
  int64_t version = 0;                      // the bundle generation last sent
  // When the broker accepted the bundle; nullopt while pending.
  std::optional<std::chrono::system_clock::time_point> last_published_at;
  friend bool operator==(const ManifestRenderRef&, const ManifestRenderRef&) = default;
};

// The hub Application a dispatched resource reports for.
struct HubAppRef {
  std::string resource_id;  // UUID, lower case
  std::string cluster;
  std::string hub_namespace;
  std::string hub_name;
  std::optional<std::string> appset_namespace;
  std::optional<std::string> appset_name;
  DeletionState deletion_state = DeletionState::kLive;
  // Set when the resource is delivered as rendered manifests; nullopt for Application delivery.
  std::optional<ManifestRenderRef> manifest = std::nullopt;
  friend bool operator==(const HubAppRef&, const HubAppRef&) = default;
};

// The bundle last dispatched for one resource (dispatched_resources.payload).
struct DispatchedPayload {
  std::string resource_id;
  std::string payload_hash;
  std::string payload;  // the ManifestBundle JSON
  friend bool operator==(const DispatchedPayload&, const DispatchedPayload&) = default;
};

// The last status the sink applied to the hub for one resource (one `resource_status` row).
struct AppliedStatus {
  std::string resource_id;
  int64_t last_sequence_id = 0;  // snowflake value; 0 = unknown
  std::string status_hash;       // the event's statushash
  std::string material_hash;     // hash of the material fields written to the hub
  std::optional<std::string> sync_status;
  std::optional<std::string> health_status;
  std::optional<std::string> appset_namespace;
  std::optional<std::string> appset_name;
  // When reconciledAt/observedAt were last written (every hub write carries them).
  std::optional<std::chrono::system_clock::time_point> volatile_written_at;
  // The dispatch version the agent reported it applied (its `dispatchVersion` feedback value,
  // end-to-end acknowledgement: docs/reliability.md finding 6), as the sink saves it (the highest
  // it has seen); nullopt when none was. The dispatcher republishes what is not acknowledged.
  std::optional<int32_t> acked_version;
  // Saved only: an acknowledgement alone (no status; services/status-sink/coalescing/coalescer.h),
  // whose sync_status and health_status are not known: the stored ones stay. Read back false.
  bool acknowledgement_only = false;
  friend bool operator==(const AppliedStatus&, const AppliedStatus&) = default;
};

// `later` saved over `earlier` (one resource): `later`, with `earlier`'s sync and health when
// `later` is an acknowledgement alone (an acknowledgement alone then only if both are).
inline AppliedStatus KeepingStatusOf(const AppliedStatus& earlier, const AppliedStatus& later) {
  AppliedStatus merged = later;
  if (later.acknowledgement_only) {
    merged.sync_status = earlier.sync_status;
    merged.health_status = earlier.health_status;
    merged.acknowledgement_only = earlier.acknowledgement_only;
  }
  return merged;
}

// What a status resync request should carry for one resource: every dispatched resource with the
// last status hash applied ("" when none, which differs from any hash so the agent resends it).
struct ResyncEntry {
  std::string resource_id;
  std::string cluster;
  std::string status_hash;
  friend bool operator==(const ResyncEntry&, const ResyncEntry&) = default;
};

// Applications of one ApplicationSet with one (sync, health) pair; "" for an absent value.
struct AppSetCount {
  std::string appset_namespace;
  std::string appset_name;
  std::string sync_status;
  std::string health_status;
  int64_t count = 0;
  friend bool operator==(const AppSetCount&, const AppSetCount&) = default;
};

class StatusStore {
 public:
  virtual ~StatusStore() = default;

  // The hub Applications of the given resource ids, in no particular order; ids without a
  // dispatched resource (or not UUIDs) are simply absent from the answer. Resources in manifest
  // delivery carry their `manifest_renders` row, version and publication time (one statement).
  virtual absl::StatusOr<std::vector<HubAppRef>> LookupHubApps(
      const std::vector<std::string>& resource_ids) = 0;

  // The dispatched payloads of the given resource ids, in no particular order; unknown ids (or
  // not UUIDs) are absent.
  virtual absl::StatusOr<std::vector<DispatchedPayload>> LookupPayloads(
      const std::vector<std::string>& resource_ids) = 0;

  // Resources in manifest delivery whose `manifest_renders` row changed after the sink last
  // saved their applied status (or that have none): what a missed `mmi_manifest_render`
  // notification may have left unwritten. Calls `fn` with (resource id, cluster).
  virtual absl::Status ForEachStaleManifestRender(
      const std::function<void(const std::string& resource_id, const std::string& cluster)>&
          fn) = 0;

  // Calls `fn` for every stored applied status, in no particular order (start-up resume).
  virtual absl::Status ForEachAppliedStatus(
      const std::function<void(const AppliedStatus&)>& fn) = 0;

  // Upserts every row atomically (the last entry of a resource in the batch wins, as
  // KeepingStatusOf merges it: an acknowledgement alone keeps the stored sync and health).
  virtual absl::Status SaveAppliedStatuses(const std::vector<AppliedStatus>& statuses) = 0;

  // Every dispatched resource (live or deleting) with its last applied status hash.
  virtual absl::Status ForEachResyncEntry(const std::function<void(const ResyncEntry&)>& fn) = 0;

  // The agent confirmed the deletion (Deleted=True): in one transaction, sets the dispatched
  // resource's deletion_state to 2 (as DispatchStore::MarkDeletionConfirmed), removes its
  // resource_status row and sends `NOTIFY mmi_deletion_confirmed, '<resource_id>'` so the
  // dispatcher reacts. Only for a resource being deleted (deletion_state 1 or 2): for a live one
  // (never asked to delete, or re-created since) a late or redelivered Deleted report changes
  // nothing. Idempotent. Returns true when the resource is (now) confirmed deleted, false (and
  // nothing done) when it is unknown or live: the caller reports such a Deleted report.
  virtual absl::StatusOr<bool> MarkDeletionConfirmed(const std::string& resource_id) = 0;

  // Per-ApplicationSet counts by sync and health over resource_status (Applications without an
  // ApplicationSet are not counted). Sorted by (namespace, name, sync, health).
  virtual absl::StatusOr<std::vector<AppSetCount>> AppSetCounts() = 0;
};

// MarkDeletionConfirmed notifies kDeletionConfirmedChannel (dispatch_store.h).
// The dispatcher notifies kManifestRenderChannel (dispatch_store.h) with every write of a
// `manifest_renders` row.

}  // namespace mmi::store
