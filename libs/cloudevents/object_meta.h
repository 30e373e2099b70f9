// The `metadata` and `logtracing` extensions (../shared/spec/maestro-protocol.md §1.4, §2.2):
// both are CloudEvents Strings whose content is JSON.
//
// `metadata` carries the ManifestWork's Kubernetes ObjectMeta. ObjectMeta models the members OCM
// reads and keeps every other member (selfLink, managedFields, deletionGracePeriodSeconds, ...)
// in `other`, so nothing is lost on a re-encode. Encoding writes compact JSON, keys sorted (as
// Maestro does), zero values omitted. Parsing validates member types (Go's decoder rejects the
// event otherwise) and returns kInvalidArgument naming the member (`metadata.labels.app`).
//
// `logtracing` is a JSON object of string -> string; `{}` when nothing to trace.
// Thread-safe (pure functions).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "libs/cloudevents/codec_options.h"
#include "libs/cloudevents/event.h"
#include "nlohmann/json.hpp"

namespace mmi::cloudevents {

struct ObjectMeta {
  std::string name;
  std::string generate_name;
  std::string namespace_;
  std::string uid;
  std::string resource_version;  // Kubernetes resourceVersion: a string
  std::int64_t generation = 0;
  // Written with seconds precision, as Kubernetes does.
  std::optional<Timestamp> creation_timestamp;
  std::optional<Timestamp> deletion_timestamp;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  std::vector<std::string> finalizers;
  std::vector<nlohmann::json> owner_references;     // JSON objects
  nlohmann::json other = nlohmann::json::object();  // every other member, as received
  friend bool operator==(const ObjectMeta&, const ObjectMeta&) = default;
};

absl::StatusOr<ObjectMeta> ParseObjectMeta(std::string_view json, const CodecLimits& limits = {});
absl::StatusOr<ObjectMeta> ObjectMetaFromJson(const nlohmann::json& value);
nlohmann::json ToJson(const ObjectMeta& meta);
// kInvalidArgument on invalid UTF-8.
absl::StatusOr<std::string> FormatObjectMeta(const ObjectMeta& meta);

// The event's `metadata` extension parsed. kNotFound when absent; kInvalidArgument when it is not
// a String or its content is not ObjectMeta JSON.
absl::StatusOr<ObjectMeta> ObjectMetaOf(const Event& event, const CodecLimits& limits = {});
// Sets the `metadata` extension (a String holding the JSON).
absl::Status SetObjectMeta(Event& event, const ObjectMeta& meta);

using LogTracing = std::map<std::string, std::string>;
// Only keys with this prefix are used by OCM.
inline constexpr std::string_view kLogTracingKeyPrefix = "logging.open-cluster-management.io/";

absl::StatusOr<LogTracing> ParseLogTracing(std::string_view json, const CodecLimits& limits = {});
absl::StatusOr<std::string> FormatLogTracing(const LogTracing& tracing);  // "{}" when empty
// Empty when the extension is absent; kInvalidArgument when malformed.
absl::StatusOr<LogTracing> LogTracingOf(const Event& event, const CodecLimits& limits = {});

}  // namespace mmi::cloudevents
