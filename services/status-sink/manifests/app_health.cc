#include "services/status-sink/manifests/app_health.h"

#include <string_view>

#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"
#include "libs/kube_object/object.h"

namespace mmi::status_sink {
namespace {

constexpr std::string_view kArgoHook = "argocd.argoproj.io/hook";
constexpr std::string_view kHelmHook = "helm.sh/hook";

bool IsChildApplication(const ManagedResource& resource) {
  return resource.group == "argoproj.io" && resource.kind == "Application";
}

}  // namespace

bool IsSkipped(const nlohmann::json& manifest) {
  const nlohmann::json& annotations = kube::Annotations(manifest);
  if (!annotations.contains(kArgoHook)) {
    return false;
  }
  for (absl::string_view type : absl::StrSplit(kube::StringAt(annotations, kArgoHook), ',')) {
    if (absl::StripAsciiWhitespace(type) == "Skip") {
      return true;
    }
  }
  return false;
}

bool IsHook(const nlohmann::json& manifest) {
  const nlohmann::json& annotations = kube::Annotations(manifest);
  if (annotations.contains(kArgoHook)) {
    return !IsSkipped(manifest);
  }
  if (annotations.contains(kHelmHook)) {
    return kube::StringAt(annotations, kHelmHook) != "crd-install";
  }
  return false;
}

std::optional<ResourceHealth> ShownHealth(const ManagedResource& resource) {
  if (resource.hook || resource.skipped) {
    return std::nullopt;
  }
  if (!resource.live) {
    return ResourceHealth{.status = HealthCode::kMissing, .message = ""};
  }
  if (resource.ignore_health) {
    return std::nullopt;
  }
  return resource.live_health;
}

HealthCode AggregateHealth(const std::vector<ManagedResource>& resources) {
  HealthCode app = HealthCode::kHealthy;
  bool contains_resources = false;
  bool contains_live = false;
  for (const ManagedResource& resource : resources) {
    if (resource.hook || resource.skipped) {
      continue;
    }
    contains_resources = true;
    contains_live = contains_live || resource.live;
    const std::optional<ResourceHealth> health = ShownHealth(resource);
    if (!health.has_value()) {
      continue;
    }
    if (!resource.live) {
      continue;  // Missing: OutOfSync already says so
    }
    if (IsChildApplication(resource) &&
        (health->status == HealthCode::kMissing || health->status == HealthCode::kUnknown)) {
      continue;
    }
    if (IsWorse(app, health->status)) {
      app = health->status;
    }
  }
  if (contains_resources && !contains_live && IsWorse(app, HealthCode::kMissing)) {
    app = HealthCode::kMissing;
  }
  return app;
}

}  // namespace mmi::status_sink
