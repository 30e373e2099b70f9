// Reading Kubernetes objects held as nlohmann::json, without exceptions: fields that are absent
// or of another type read as empty. Plus the API's time formats and DNS-1123 name rules.
//
//   const std::string name = kube::StringAt(kube::Metadata(app), "name");
//   const std::string cluster = kube::Annotation(app,
//   "apps.open-cluster-management.io/ocm-cluster"); status["lastUpdateTime"] =
//   kube::KubeTime(clock.Now());
//
// Pure functions, thread-safe. Target `mmi::kube_object` (no network, no curl): every library may
// use it; `mmi::kube` brings it along.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace mmi::kube {

// --- fields ---

// The member `key` of `object`; a null value when `object` is not an object or has no `key`.
const nlohmann::json& FieldAt(const nlohmann::json& object, std::string_view key);
// The member `key` when it is an object; an empty object otherwise.
const nlohmann::json& ObjectAt(const nlohmann::json& object, std::string_view key);
// The member `key` when it is a string; "" otherwise.
std::string StringAt(const nlohmann::json& object, std::string_view key);
// The value at `pointer` when it is a string; "" otherwise (also when nothing is there).
std::string StringAt(const nlohmann::json& object, const nlohmann::json::json_pointer& pointer);
// The member `key` when it is a string; nullopt otherwise (absent and "" differ).
std::optional<std::string> FindString(const nlohmann::json& object, std::string_view key);
// The value at `pointer` when it is a boolean; false otherwise.
bool BoolAt(const nlohmann::json& object, const nlohmann::json::json_pointer& pointer);

// --- metadata ---

// metadata, metadata.labels, metadata.annotations; an empty object when absent.
const nlohmann::json& Metadata(const nlohmann::json& object);
const nlohmann::json& Labels(const nlohmann::json& object);
const nlohmann::json& Annotations(const nlohmann::json& object);
// One label or annotation value; "" when absent.
std::string Label(const nlohmann::json& object, std::string_view key);
std::string Annotation(const nlohmann::json& object, std::string_view key);
// metadata.namespace + "/" + metadata.name ("name" alone for cluster-scoped objects).
std::string ObjectKey(const nlohmann::json& object);
std::string ObjectKey(std::string_view ns, std::string_view name);
// ObjectKey() back into {namespace, name} ({"", key} for a cluster-scoped key).
std::pair<std::string, std::string> SplitObjectKey(std::string_view key);
// metadata.resourceVersion, "" when absent.
std::string ResourceVersionOf(const nlohmann::json& object);

// --- time ---

// metav1.Time: RFC 3339 in UTC, whole seconds (truncated): "2027-01-15T08:00:00Z".
std::string KubeTime(std::chrono::system_clock::time_point time);
// metav1.MicroTime: RFC 3339 in UTC with microseconds: "2027-01-15T08:00:00.250000Z".
std::string KubeMicroTime(std::chrono::system_clock::time_point time);
// Any RFC 3339 date-time ("Z" or a numeric offset, any fractional digits) as the API server
// writes metav1.Time and MicroTime; kInvalidArgument naming the text otherwise.
absl::StatusOr<std::chrono::system_clock::time_point> ParseKubeTime(std::string_view text);

// --- names ---

// A DNS-1123 label (namespaces, most names, Maestro consumers, MQTT topic segments):
// [a-z0-9]([-a-z0-9]*[a-z0-9])?, at most 63 characters.
bool IsDns1123Label(std::string_view name);
// A DNS-1123 subdomain (ConfigMap, Secret and most object names): labels as above joined by
// '.', at most 253 characters.
bool IsDns1123Subdomain(std::string_view name);

}  // namespace mmi::kube
