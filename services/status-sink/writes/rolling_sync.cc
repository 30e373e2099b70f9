#include "services/status-sink/writes/rolling_sync.h"

#include "absl/strings/str_cat.h"

namespace mmi::status_sink {

absl::StatusOr<ProgressingMode> ParseProgressingMode(std::string_view text) {
  if (text == "RollingSync") {
    return ProgressingMode::kRollingSync;
  }
  if (text == "Always" || text == "true") {
    return ProgressingMode::kAlways;
  }
  if (text == "Never" || text == "false") {
    return ProgressingMode::kNever;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("status.progressingBeforeHealthy: expected RollingSync, Always or Never, got '",
                   std::string(text), "'"));
}

std::string_view ProgressingModeName(ProgressingMode mode) {
  switch (mode) {
    case ProgressingMode::kNever:
      return "Never";
    case ProgressingMode::kRollingSync:
      return "RollingSync";
    case ProgressingMode::kAlways:
      return "Always";
  }
  return "?";
}

bool WantsProgressingFirst(ProgressingMode mode, const RollingSyncLookup* lookup,
                           const std::optional<std::string>& appset_ns,
                           const std::optional<std::string>& appset_name) {
  switch (mode) {
    case ProgressingMode::kNever:
      return false;
    case ProgressingMode::kAlways:
      return true;
    case ProgressingMode::kRollingSync:
      break;
  }
  if (!appset_name.has_value() || appset_name->empty()) {
    return false;  // no ApplicationSet, no rollout waiting for the transition
  }
  if (lookup == nullptr) {
    return true;
  }
  return lookup->UsesRollingSync(appset_ns.value_or(""), *appset_name).value_or(true);
}

kube::InformerSettings InformerRollingSyncLookup::Settings() {
  kube::InformerSettings settings;
  settings.resource = kube::ResourceRef{"argoproj.io", "v1alpha1", "applicationsets", ""};
  settings.transform = kube::DropFields({"/metadata/managedFields", "/spec/template",
                                         "/spec/generators", "/spec/templatePatch", "/status"});
  return settings;
}

InformerRollingSyncLookup::InformerRollingSyncLookup(kube::KubeClient& client, const Clock& clock,
                                                     prometheus::Registry* registry)
    : informer_(client, clock, Settings(), registry) {}

std::optional<bool> InformerRollingSyncLookup::UsesRollingSync(std::string_view ns,
                                                               std::string_view name) const {
  if (!informer_.HasSynced()) {
    return std::nullopt;
  }
  const kube::ObjectPtr appset = informer_.Get(ns, name);
  if (appset == nullptr) {
    return std::nullopt;  // not seen yet (watch lag) or deleted: unknown
  }
  const nlohmann::json* type = nullptr;
  if (auto spec = appset->find("spec"); spec != appset->end() && spec->is_object()) {
    if (auto strategy = spec->find("strategy"); strategy != spec->end() && strategy->is_object()) {
      if (auto t = strategy->find("type"); t != strategy->end()) {
        type = &*t;
      }
    }
  }
  return type != nullptr && type->is_string() && type->get<std::string>() == "RollingSync";
}

}  // namespace mmi::status_sink
