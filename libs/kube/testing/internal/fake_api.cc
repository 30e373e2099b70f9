#include "libs/kube/testing/internal/fake_api.h"

#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "libs/kube/errors.h"

namespace mmi::kube::testing::internal {

using nlohmann::json;

// A metav1.Status of a failure, as the API server sends it.
json FailureStatus(int code, const std::string& reason, const std::string& message) {
  return {{"kind", "Status"},   {"apiVersion", "v1"}, {"status", "Failure"},
          {"message", message}, {"reason", reason},   {"code", code}};
}

absl::Status ApiError(const std::string& context, int code, const std::string& reason,
                      const std::string& message) {
  return StatusFromApiStatus(context, FailureStatus(code, reason, message));
}

std::string MetaString(const json& object, const char* key) {
  const auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) {
    return "";
  }
  const auto it = meta->find(key);
  return it != meta->end() && it->is_string() ? it->get<std::string>() : "";
}

// Equality-based label selectors: "a=b", "a==b", "a!=b", "a", "!a", comma-separated.
bool MatchesLabels(const json& object, const std::string& selector) {
  if (selector.empty()) {
    return true;
  }
  json labels = json::object();
  if (const auto meta = object.find("metadata"); meta != object.end() && meta->is_object()) {
    if (const auto l = meta->find("labels"); l != meta->end() && l->is_object()) {
      labels = *l;
    }
  }
  for (absl::string_view raw : absl::StrSplit(selector, ',')) {
    std::string term(absl::StripAsciiWhitespace(raw));
    if (term.empty()) {
      continue;
    }
    if (term[0] == '!') {
      if (labels.contains(term.substr(1))) {
        return false;
      }
      continue;
    }
    size_t pos = term.find("!=");
    if (pos != std::string::npos) {
      const std::string key = term.substr(0, pos);
      const std::string value = term.substr(pos + 2);
      if (labels.contains(key) && labels[key] == value) {
        return false;
      }
      continue;
    }
    pos = term.find('=');
    if (pos == std::string::npos) {
      if (!labels.contains(term)) {
        return false;
      }
      continue;
    }
    const std::string key = term.substr(0, pos);
    std::string value = term.substr(pos + 1);
    if (!value.empty() && value[0] == '=') {
      value.erase(0, 1);
    }
    if (!labels.contains(key) || labels[key] != value) {
      return false;
    }
  }
  return true;
}

bool MatchesFields(const json& object, const std::string& selector) {
  if (selector.empty()) {
    return true;
  }
  for (absl::string_view raw : absl::StrSplit(selector, ',')) {
    const std::string term(absl::StripAsciiWhitespace(raw));
    const size_t pos = term.find('=');
    if (pos == std::string::npos) {
      continue;
    }
    const std::string key = term.substr(0, pos);
    std::string value = term.substr(pos + 1);
    if (!value.empty() && value[0] == '=') {
      value.erase(0, 1);
    }
    if (key == "metadata.name" && MetaString(object, "name") != value) {
      return false;
    }
    if (key == "metadata.namespace" && MetaString(object, "namespace") != value) {
      return false;
    }
  }
  return true;
}

bool InScope(const ResourceRef& ref, const json& object) {
  return ref.namespace_name.empty() || MetaString(object, "namespace") == ref.namespace_name;
}

}  // namespace mmi::kube::testing::internal
