// The CloudEvents 1.0 model used on every Maestro / Open Cluster Management leg
// (../shared/spec/maestro-protocol.md §1): core attributes, typed extension values, the OCM
// `type` grammar and the names of the extensions OCM uses.
//
// An `Event` is a plain value: copyable, movable, no internal synchronisation (use one per
// thread or guard it yourself). It carries no transport details; the codecs in
// `json_format.h`, `mqtt_codec.h`, `grpc_codec.h` and `kafka_codec.h` map it to and from the wire.
//
//   Event event;
//   event.id = "5f0c3c1e-...";
//   event.source = "app-work-client";
//   event.type = std::string(kSpecCreateRequestType);
//   event.SetString(kExtClusterName, "cluster1");
//   event.SetInteger(kExtResourceVersion, 0);
//   ASSIGN_OR_RETURN(int32_t version, event.ResourceVersion());
//
// Typed accessors follow the tolerance rules of the spec (§1.4, §8 items 10-11): an Integer may
// arrive as a decimal String, a Timestamp as an RFC 3339 String. They return kNotFound when the
// extension is absent and kInvalidArgument when it is present but has the wrong type or cannot be
// parsed; messages name the extension.
#pragma once

#include <chrono>
#include <compare>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace mmi::cloudevents {

// CloudEvents Timestamp with nanosecond precision, always UTC.
using Timestamp = std::chrono::sys_time<std::chrono::nanoseconds>;

// CloudEvents Binary: opaque bytes. A distinct type so that it is never confused with String.
struct Binary {
  std::string bytes;
  friend bool operator==(const Binary&, const Binary&) = default;
};

// The value of an extension attribute: String, Integer (int32), Boolean, Timestamp or Binary.
// URI and URI-reference values are carried as String (as the Go SDK does).
using AttributeValue = std::variant<std::string, std::int32_t, bool, Timestamp, Binary>;

// Canonical CloudEvents string form of a value (what MQTT user properties and Kafka headers
// carry): strings unchanged, integers in decimal, booleans `true`/`false`, timestamps RFC 3339
// UTC with trailing fractional zeros trimmed, binary as standard base64.
std::string CanonicalString(const AttributeValue& value);

// RFC 3339 in UTC with 0-9 fractional digits, trailing zeros trimmed:
// `2025-12-16T06:00:17.921082037Z`, `2026-06-02T09:00:00Z`.
std::string FormatTimestamp(Timestamp time);
// Parses any valid RFC 3339 date-time (`T`/`t`, `Z`/`z` or a numeric offset, any number of
// fractional digits, digits beyond nanoseconds truncated). kInvalidArgument on anything else,
// including dates that do not exist and years outside 1678..2261 (int64 nanoseconds).
absl::StatusOr<Timestamp> ParseTimestamp(std::string_view text);

// ---------------------------------------------------------------------------------------------
// `type` grammar (§1.2): <group>.<version>.<resource>.<subresource>.<action>, where the group may
// itself contain dots.

enum class Subresource { kSpec, kStatus };

enum class Action {
  kCreateRequest,
  kUpdateRequest,
  kDeleteRequest,
  kResyncRequest,
  kResyncResponse,
  kWatchRequest,  // defined by OCM, unused
};

std::string_view SubresourceName(Subresource subresource);  // "spec" | "status"
std::string_view ActionName(Action action);                 // "create_request", ...
absl::StatusOr<Subresource> ParseSubresource(std::string_view text);
absl::StatusOr<Action> ParseAction(std::string_view text);

// The data type part: <group>.<version>.<resource>.
struct DataType {
  std::string group;     // e.g. "io.open-cluster-management.works"
  std::string version;   // e.g. "v1alpha1"
  std::string resource;  // e.g. "manifestbundles"

  // Parses a data type (at least 3 non-empty dot-separated tokens). kInvalidArgument otherwise.
  static absl::StatusOr<DataType> Parse(std::string_view text);
  std::string ToString() const;
  friend bool operator==(const DataType&, const DataType&) = default;
};

struct EventType {
  DataType data_type;
  Subresource subresource = Subresource::kSpec;
  Action action = Action::kCreateRequest;

  // Parses a full `type`. kInvalidArgument (naming the problem) when there are fewer than 5
  // tokens, an empty token, a subresource other than `spec`/`status`, or an unknown action.
  static absl::StatusOr<EventType> Parse(std::string_view text);
  std::string ToString() const;
  friend bool operator==(const EventType&, const EventType&) = default;
};

inline constexpr std::string_view kSpecVersion = "1.0";
inline constexpr std::string_view kJsonContentType = "application/json";
inline constexpr std::string_view kStructuredJsonContentType = "application/cloudevents+json";

inline constexpr std::string_view kManifestBundlesDataType =
    "io.open-cluster-management.works.v1alpha1.manifestbundles";
inline constexpr std::string_view kSpecCreateRequestType =
    "io.open-cluster-management.works.v1alpha1.manifestbundles.spec.create_request";
inline constexpr std::string_view kSpecUpdateRequestType =
    "io.open-cluster-management.works.v1alpha1.manifestbundles.spec.update_request";
inline constexpr std::string_view kSpecDeleteRequestType =
    "io.open-cluster-management.works.v1alpha1.manifestbundles.spec.delete_request";
inline constexpr std::string_view kSpecResyncRequestType =
    "io.open-cluster-management.works.v1alpha1.manifestbundles.spec.resync_request";
inline constexpr std::string_view kSpecResyncResponseType =
    "io.open-cluster-management.works.v1alpha1.manifestbundles.spec.resync_response";
inline constexpr std::string_view kStatusUpdateRequestType =
    "io.open-cluster-management.works.v1alpha1.manifestbundles.status.update_request";
inline constexpr std::string_view kStatusResyncRequestType =
    "io.open-cluster-management.works.v1alpha1.manifestbundles.status.resync_request";
inline constexpr std::string_view kStatusResyncResponseType =
    "io.open-cluster-management.works.v1alpha1.manifestbundles.status.resync_response";
// gRPC keep-alive event (§4.6): not a resource event; never decoded as one.
inline constexpr std::string_view kHeartbeatType =
    "io.open-cluster-management.cloudevents.heartbeat";

// Extension names (§1.4).
inline constexpr std::string_view kExtClusterName = "clustername";
inline constexpr std::string_view kExtOriginalSource = "originalsource";
inline constexpr std::string_view kExtResourceId = "resourceid";
inline constexpr std::string_view kExtResourceVersion = "resourceversion";
inline constexpr std::string_view kExtSequenceId = "sequenceid";
inline constexpr std::string_view kExtDeletionTimestamp = "deletiontimestamp";
inline constexpr std::string_view kExtStatusHash = "statushash";
inline constexpr std::string_view kExtMetadata = "metadata";
inline constexpr std::string_view kExtLogTracing = "logtracing";

// True if `name` is a valid extension attribute name: non-empty, only [a-z0-9] (the Go SDK
// lower-cases names and rejects anything else), and not a core attribute name or `data`.
bool IsValidExtensionName(std::string_view name);

// ---------------------------------------------------------------------------------------------

struct Event {
  std::string id;
  std::string source;
  std::string spec_version{kSpecVersion};
  std::string type;
  std::optional<std::string> data_content_type;
  std::optional<Timestamp> time;
  // Extension attributes by name. Unknown extensions received from a peer are kept here too
  // (including `subject`/`dataschema`, which OCM never uses), so they survive a re-encode.
  std::map<std::string, AttributeValue, std::less<>> extensions;
  // The event data as bytes (compact JSON for every OCM payload). nullopt = no data.
  std::optional<std::string> data;

  friend bool operator==(const Event&, const Event&) = default;

  // Setters (replace any existing value). Names are not validated here; encoders do that.
  void SetString(std::string_view name, std::string value);
  void SetInteger(std::string_view name, std::int32_t value);
  void SetBoolean(std::string_view name, bool value);
  void SetTimestamp(std::string_view name, Timestamp value);
  void SetBinary(std::string_view name, std::string bytes);
  // Removes the extension; returns true if it was present.
  bool RemoveExtension(std::string_view name);

  bool HasExtension(std::string_view name) const;
  // nullptr when absent.
  const AttributeValue* FindExtension(std::string_view name) const;

  // Generic typed reads. kNotFound when absent; kInvalidArgument when present with another type
  // (String values are converted for Integer, Boolean and Timestamp, as CloudEvents allows).
  absl::StatusOr<std::string> GetString(std::string_view name) const;
  absl::StatusOr<std::int32_t> GetInteger(std::string_view name) const;
  absl::StatusOr<bool> GetBoolean(std::string_view name) const;
  absl::StatusOr<Timestamp> GetTimestamp(std::string_view name) const;

  // OCM extensions.
  absl::StatusOr<std::string> ClusterName() const;     // String (may be "")
  absl::StatusOr<std::string> OriginalSource() const;  // String (may be "")
  absl::StatusOr<std::string> ResourceId() const;      // String, non-empty
  // Integer, or String holding a decimal int32 (MQTT/Kafka/Pub/Sub deliver strings).
  absl::StatusOr<std::int32_t> ResourceVersion() const;
  absl::StatusOr<std::string> SequenceId() const;  // String, non-empty (parse: sequence_id.h)
  // Timestamp, or String holding RFC 3339.
  absl::StatusOr<Timestamp> DeletionTimestamp() const;
  absl::StatusOr<std::string> StatusHash() const;  // String
  // The raw JSON text of the `metadata` extension (parse: object_meta.h). Must be a String.
  absl::StatusOr<std::string> MetadataJson() const;
  // The raw JSON text of the `logtracing` extension. Must be a String.
  absl::StatusOr<std::string> LogTracingJson() const;

  // Parses `type` (kInvalidArgument naming the type when malformed).
  absl::StatusOr<EventType> ParsedType() const;
  bool IsHeartbeat() const { return type == kHeartbeatType; }
};

}  // namespace mmi::cloudevents
