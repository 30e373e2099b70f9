// The `data` payloads of the `io.open-cluster-management.works.v1alpha1.manifestbundles` data type
// (../shared/spec/maestro-protocol.md §2.1, §2.3): ManifestBundle (spec events) and
// ManifestBundleStatus (status events), as typed structs.
//
// Member spellings follow the wire exactly (`executer`, `statusFeedback`, `selectivelyOrphans`,
// `JsonRaw`, ...). Encoding writes what Go writes: "always" members even when empty, optional
// members only when set. Decoding accepts any member order, treats absent and `null` alike,
// ignores unknown members (as Go does) and returns kInvalidArgument naming the JSON path of the
// first member with a wrong type or an invalid value (`data.resourceStatus[0].conditions[1]
// .lastTransitionTime`). Manifests are kept as JSON objects. Thread-safe (pure functions).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "libs/cloudevents/codec_options.h"
#include "libs/cloudevents/event.h"
#include "nlohmann/json.hpp"

namespace mmi::cloudevents {

// --- spec payload (§2.1) -------------------------------------------------------------------------

// Used by manifestConfigs and by orphaning rules; all four members are always written.
struct ResourceIdentifier {
  std::string group;  // "" for the core group
  std::string resource;
  std::string name;
  std::string namespace_;  // JSON "namespace"; "" for cluster-scoped objects
  friend bool operator==(const ResourceIdentifier&, const ResourceIdentifier&) = default;
};

struct JsonPath {
  std::string name;                    // key under which the value is reported
  std::optional<std::string> version;  // API version to read with
  std::string path;                    // e.g. ".status"
  friend bool operator==(const JsonPath&, const JsonPath&) = default;
};

inline constexpr std::string_view kFeedbackWellKnownStatus = "WellKnownStatus";
inline constexpr std::string_view kFeedbackJsonPaths = "JSONPaths";

struct FeedbackRule {
  std::string type;  // kFeedbackWellKnownStatus | kFeedbackJsonPaths
  std::vector<JsonPath> json_paths;
  friend bool operator==(const FeedbackRule&, const FeedbackRule&) = default;
};

struct IgnoreField {
  std::string condition;  // "OnSpokeChange" | "OnSpokePresent"
  std::vector<std::string> json_paths;
  std::vector<std::string> json_pointers;
  std::vector<std::string> jq_path_expressions;
  friend bool operator==(const IgnoreField&, const IgnoreField&) = default;
};

struct ServerSideApplyConfig {
  bool force = false;                        // always written
  std::optional<std::string> field_manager;  // agent default "work-agent"
  std::vector<IgnoreField> ignore_fields;
  friend bool operator==(const ServerSideApplyConfig&, const ServerSideApplyConfig&) = default;
};

inline constexpr std::string_view kUpdateStrategyUpdate = "Update";
inline constexpr std::string_view kUpdateStrategyCreateOnly = "CreateOnly";
inline constexpr std::string_view kUpdateStrategyServerSideApply = "ServerSideApply";
inline constexpr std::string_view kUpdateStrategyReadOnly = "ReadOnly";

struct UpdateStrategy {
  std::optional<std::string> type;  // kUpdateStrategy*
  std::optional<ServerSideApplyConfig> server_side_apply;
  friend bool operator==(const UpdateStrategy&, const UpdateStrategy&) = default;
};

struct ConditionRule {
  std::string condition;
  std::string type;  // "WellKnownConditions" | "CEL"
  std::vector<std::string> cel_expressions;
  std::string message;
  std::string message_expression;
  friend bool operator==(const ConditionRule&, const ConditionRule&) = default;
};

struct ManifestConfigOption {
  ResourceIdentifier resource_identifier;
  std::vector<FeedbackRule> feedback_rules;
  std::optional<UpdateStrategy> update_strategy;
  std::vector<ConditionRule> condition_rules;
  std::optional<std::string> feedback_scrape_type;  // "Poll" | "Watch"
  friend bool operator==(const ManifestConfigOption&, const ManifestConfigOption&) = default;
};

struct DeleteOption {
  std::string propagation_policy;  // "Foreground" | "Orphan" | "SelectivelyOrphan"
  // JSON `selectivelyOrphans: {orphaningRules: [...]}`; nullopt = member absent.
  std::optional<std::vector<ResourceIdentifier>> orphaning_rules;
  std::optional<std::int64_t> ttl_seconds_after_finished;
  friend bool operator==(const DeleteOption&, const DeleteOption&) = default;
};

// JSON `executer: {subject: {type, serviceAccount: {namespace, name}}}`.
struct ManifestWorkExecutor {
  std::string subject_type;                              // "ServiceAccount"
  std::optional<std::string> service_account_namespace;  // set together with the name
  std::optional<std::string> service_account_name;
  friend bool operator==(const ManifestWorkExecutor&, const ManifestWorkExecutor&) = default;
};

struct ManifestBundle {
  std::vector<nlohmann::json> manifests;  // complete Kubernetes objects (JSON objects)
  std::optional<DeleteOption> delete_option;
  std::vector<ManifestConfigOption> manifest_configs;
  std::optional<ManifestWorkExecutor> executer;
  friend bool operator==(const ManifestBundle&, const ManifestBundle&) = default;
};

// --- status payload (§2.3) -----------------------------------------------------------------------

// Kubernetes metav1.Condition.
struct Condition {
  std::string type;
  std::string status;                    // "True" | "False" | "Unknown"
  std::int64_t observed_generation = 0;  // omitted when 0
  // Written with seconds precision (as Kubernetes does); null when unset.
  std::optional<Timestamp> last_transition_time;
  std::string reason;
  std::string message;
  friend bool operator==(const Condition&, const Condition&) = default;
};

struct ManifestResourceMeta {
  std::int32_t ordinal = 0;
  std::string group;
  std::string version;
  std::string kind;
  std::string resource;
  std::string name;
  std::string namespace_;
  friend bool operator==(const ManifestResourceMeta&, const ManifestResourceMeta&) = default;
};

enum class FieldValueType { kInteger, kString, kBoolean, kJsonRaw };
std::string_view FieldValueTypeName(FieldValueType type);  // "Integer", ..., "JsonRaw"

// NOLINTNEXTLINE(bugprone-exception-escape): nlohmann::json moves are noexcept; tidy 14 misreads.
struct FieldValue {
  FieldValueType type = FieldValueType::kString;
  std::int64_t integer = 0;       // kInteger
  std::string string;             // kString
  bool boolean = false;           // kBoolean
  std::string json_raw;           // kJsonRaw: the JSON text exactly as received
  nlohmann::json json_raw_value;  // kJsonRaw: `json_raw` parsed (decoding fills it)
  friend bool operator==(const FieldValue&, const FieldValue&) = default;
};

struct FeedbackValue {
  std::string name;  // the JsonPath name, e.g. "status"
  FieldValue field_value;
  friend bool operator==(const FeedbackValue&, const FeedbackValue&) = default;
};

struct ManifestCondition {
  ManifestResourceMeta resource_meta;
  std::vector<FeedbackValue> status_feedback;  // JSON `statusFeedback: {values: [...]}`
  std::vector<Condition> conditions;
  friend bool operator==(const ManifestCondition&, const ManifestCondition&) = default;
};

struct ManifestBundleStatus {
  // Echo of the spec, added by Maestro's gRPC source server; agents do not send it.
  std::optional<ManifestBundle> manifest_bundle;
  std::vector<Condition> conditions;  // written as null when empty, like Go
  std::vector<ManifestCondition> resource_status;
  friend bool operator==(const ManifestBundleStatus&, const ManifestBundleStatus&) = default;
};

inline constexpr std::string_view kConditionDeleted = "Deleted";
inline constexpr std::string_view kConditionTrue = "True";

// The condition of that type, or nullptr.
const Condition* FindCondition(const std::vector<Condition>& conditions, std::string_view type);
// True when the work-level conditions contain Deleted=True: the agent has removed everything and
// the deletion is complete (§6.4).
bool IsDeleted(const ManifestBundleStatus& status);

// --- JSON ----------------------------------------------------------------------------------------

nlohmann::json ToJson(const ManifestBundle& bundle);
nlohmann::json ToJson(const ManifestBundleStatus& status);
// `path` prefixes error messages (e.g. "data").
absl::StatusOr<ManifestBundle> ManifestBundleFromJson(const nlohmann::json& value,
                                                      std::string_view path = "data",
                                                      const CodecLimits& limits = {});
absl::StatusOr<ManifestBundleStatus> ManifestBundleStatusFromJson(const nlohmann::json& value,
                                                                  std::string_view path = "data",
                                                                  const CodecLimits& limits = {});

// Compact JSON bytes for Event::data. kInvalidArgument when a manifest is not a JSON object or
// holds invalid UTF-8.
absl::StatusOr<std::string> EncodeManifestBundle(const ManifestBundle& bundle);
absl::StatusOr<std::string> EncodeManifestBundleStatus(const ManifestBundleStatus& status);
absl::StatusOr<ManifestBundle> DecodeManifestBundle(std::string_view data,
                                                    const CodecLimits& limits = {});
absl::StatusOr<ManifestBundleStatus> DecodeManifestBundleStatus(std::string_view data,
                                                                const CodecLimits& limits = {});

// The payload of an event; kInvalidArgument when the event has no data or a non-JSON
// datacontenttype.
absl::StatusOr<ManifestBundle> ManifestBundleOf(const Event& event, const CodecLimits& limits = {});
absl::StatusOr<ManifestBundleStatus> ManifestBundleStatusOf(const Event& event,
                                                            const CodecLimits& limits = {});

}  // namespace mmi::cloudevents
