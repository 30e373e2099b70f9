#include "libs/kube_object/object.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"

namespace mmi::kube {
namespace {

using nlohmann::json;

const json& Null() {
  static const json* const kNull = new json();
  return *kNull;
}

const json& EmptyObject() {
  static const json* const kEmpty = new json(json::object());
  return *kEmpty;
}

bool IsAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

// [a-z0-9]([-a-z0-9]*[a-z0-9])?, any length >= 1.
bool IsLabelShape(std::string_view part) {
  if (part.empty() || !IsAlnum(part.front()) || !IsAlnum(part.back())) {
    return false;
  }
  for (const char c : part) {
    if (!IsAlnum(c) && c != '-') {
      return false;
    }
  }
  return true;
}

}  // namespace

const json& FieldAt(const json& object, std::string_view key) {
  if (!object.is_object()) {
    return Null();
  }
  const auto it = object.find(key);
  return it != object.end() ? *it : Null();
}

const json& ObjectAt(const json& object, std::string_view key) {
  const json& field = FieldAt(object, key);
  return field.is_object() ? field : EmptyObject();
}

std::string StringAt(const json& object, std::string_view key) {
  const json& field = FieldAt(object, key);
  return field.is_string() ? field.get<std::string>() : std::string();
}

std::string StringAt(const json& object, const json::json_pointer& pointer) {
  return object.contains(pointer) && object.at(pointer).is_string()
             ? object.at(pointer).get<std::string>()
             : std::string();
}

std::optional<std::string> FindString(const json& object, std::string_view key) {
  const json& field = FieldAt(object, key);
  if (!field.is_string()) {
    return std::nullopt;
  }
  return field.get<std::string>();
}

bool BoolAt(const json& object, const json::json_pointer& pointer) {
  return object.contains(pointer) && object.at(pointer).is_boolean() &&
         object.at(pointer).get<bool>();
}

const json& Metadata(const json& object) { return ObjectAt(object, "metadata"); }
const json& Labels(const json& object) { return ObjectAt(Metadata(object), "labels"); }
const json& Annotations(const json& object) { return ObjectAt(Metadata(object), "annotations"); }

std::string Label(const json& object, std::string_view key) {
  return StringAt(Labels(object), key);
}

std::string Annotation(const json& object, std::string_view key) {
  return StringAt(Annotations(object), key);
}

std::string ObjectKey(std::string_view ns, std::string_view name) {
  if (ns.empty()) {
    return std::string(name);
  }
  return absl::StrCat(std::string(ns), "/", std::string(name));
}

std::pair<std::string, std::string> SplitObjectKey(std::string_view key) {
  const auto slash = key.find('/');
  if (slash == std::string_view::npos) {
    return {"", std::string(key)};
  }
  return {std::string(key.substr(0, slash)), std::string(key.substr(slash + 1))};
}

std::string ObjectKey(const json& object) {
  const json& meta = Metadata(object);
  return ObjectKey(StringAt(meta, "namespace"), StringAt(meta, "name"));
}

std::string ResourceVersionOf(const json& object) {
  return StringAt(Metadata(object), "resourceVersion");
}

std::string KubeTime(std::chrono::system_clock::time_point time) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromChrono(time), absl::UTCTimeZone());
}

std::string KubeMicroTime(std::chrono::system_clock::time_point time) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", absl::FromChrono(time), absl::UTCTimeZone());
}

absl::StatusOr<std::chrono::system_clock::time_point> ParseKubeTime(std::string_view text) {
  absl::Time parsed;
  std::string error;
  if (!absl::ParseTime(absl::RFC3339_full, std::string(text), &parsed, &error)) {
    return absl::InvalidArgumentError(
        absl::StrCat("not a Kubernetes (RFC 3339) time \"", std::string(text), "\": ", error));
  }
  return absl::ToChronoTime(parsed);
}

bool IsDns1123Label(std::string_view name) { return name.size() <= 63 && IsLabelShape(name); }

bool IsDns1123Subdomain(std::string_view name) {
  if (name.empty() || name.size() > 253) {
    return false;
  }
  size_t start = 0;
  while (true) {
    const size_t dot = name.find('.', start);
    if (!IsLabelShape(name.substr(start, dot == std::string_view::npos ? dot : dot - start))) {
      return false;
    }
    if (dot == std::string_view::npos) {
      return true;
    }
    start = dot + 1;
  }
}

}  // namespace mmi::kube
