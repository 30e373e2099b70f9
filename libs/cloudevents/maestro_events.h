// Every Maestro event the project builds, and the classification of what it receives, in one
// place (maestro-protocol.md §1.5 attribute matrix, §6). The services and tools say *when* to
// send; these functions say *what* each event carries, so every sender emits the same
// extensions. The transports only carry the result (wire formats: the *_codec.h files).
// Pure functions, thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "libs/cloudevents/event.h"
#include "libs/cloudevents/resync.h"

namespace mmi::cloudevents {

// What every event about one resource names.
struct ResourceEventHeader {
  std::string id;            // unique (a UUID)
  std::string source;        // the sender: our source id, or the agent id
  Timestamp time{};          // the event time
  std::string cluster;       // `clustername`
  std::string resource_id;   // `resourceid`
  std::int32_t version = 0;  // `resourceversion`
};

// --- Spec events, source → agent / Maestro (§1.5 rows 1-2, 6; §6.1, §6.4, §6.5) ---
// Each carries clustername, originalsource "", resourceid, resourceversion, logtracing "{}".

// spec.create_request (`create`) or spec.update_request with `metadata` = `metadata_json`
// (ObjectMeta JSON) and the ManifestBundle JSON `bundle_json` as data.
Event MakeSpecRequest(ResourceEventHeader header, bool create, std::string metadata_json,
                      std::string bundle_json);

// spec.delete_request with `deletiontimestamp` and `metadata` (ObjectMeta JSON including
// `deletionTimestamp`), no data.
Event MakeSpecDeleteRequest(ResourceEventHeader header, Timestamp deletion_time,
                            std::string metadata_json);

// spec.resync_response carrying the stored spec: `bundle_json` as data, `metadata` only when
// `metadata_json` is non-empty.
Event MakeSpecResyncResponse(ResourceEventHeader header, std::string metadata_json,
                             std::string bundle_json);

// spec.resync_response telling the agent to delete: `deletiontimestamp`, no metadata, no data.
Event MakeSpecResyncDeleteResponse(ResourceEventHeader header, Timestamp deletion_time);

// Turns a spec.resync_response carrying a spec into the delete answer above, keeping its id,
// time and resource extensions: drops data and metadata, sets `deletiontimestamp`.
void ToSpecResyncDeleteResponse(Event& response, Timestamp deletion_time);

// --- Resync requests (§1.5 rows 5 and 9; §6.5, §6.6) ---

// spec.resync_request from agent `source` for its own `cluster` (originalsource ""), carrying
// `versions` (empty = "send everything"). kInvalidArgument when the list cannot be encoded.
absl::StatusOr<Event> MakeSpecResyncRequest(std::string_view source, std::string_view cluster,
                                            const ResourceVersionList& versions, std::string id,
                                            Timestamp time);

// status.resync_request from `source_id` for `cluster` ("" = all clusters) carrying `hashes`
// (empty = "send every status"); clustername and originalsource "", no resource extensions.
// kInvalidArgument when the hash list cannot be encoded.
absl::StatusOr<Event> MakeStatusResyncRequest(std::string_view source_id, std::string_view cluster,
                                              const ResourceStatusHashList& hashes, std::string id,
                                              Timestamp time);

// --- Status events, agent → source (§1.5 row 7; §6.2, §6.3) ---

// What a status event adds to the header.
struct StatusEventFields {
  std::string original_source;  // `originalsource`: the owning source
  std::string sequence_id;      // `sequenceid` (sequence_id.h)
  std::string status_hash;      // `statushash` (status_hash.h)
  std::string metadata_json;    // `metadata`: the work's ObjectMeta JSON
};

// status.update_request (`resync_response` false) or status.resync_response carrying the
// ManifestBundleStatus JSON `status_json`, with logtracing "{}".
Event MakeStatusEvent(ResourceEventHeader header, bool resync_response, StatusEventFields fields,
                      std::string status_json);

// --- Classification of received events ---

// What a received event is: the `type` label of mmi_events_received_total.
enum class ReceivedKind { kStatus, kSpecResync, kStatusResync, kOther };
// status update_request / resync_response → kStatus; status resync_request → kStatusResync;
// any spec resync_request → kSpecResync; everything else (malformed types included) → kOther.
ReceivedKind ClassifyReceived(const Event& event);
std::string_view ReceivedKindName(ReceivedKind kind);

}  // namespace mmi::cloudevents
