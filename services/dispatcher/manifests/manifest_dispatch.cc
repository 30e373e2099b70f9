#include "services/dispatcher/manifests/manifest_dispatch.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "libs/cloudevents/manifest_bundle.h"
#include "libs/kube_object/object.h"
#include "libs/status_feedback/feedback_rules.h"
#include "services/dispatcher/manifests/delivery_mode.h"
#include "services/dispatcher/manifests/sync_order.h"

namespace mmi::dispatcher::manifests {

using kube::ObjectAt;
using kube::StringAt;
using nlohmann::json;

namespace {

bool IsVowel(char c) { return c == 'a' || c == 'e' || c == 'i' || c == 'o' || c == 'u'; }

// One rendered manifest and its manifestConfigs entry. `at` names it in errors.
absl::StatusOr<std::pair<json, cloudevents::ManifestConfigOption>> ManifestAndConfig(
    const std::string& text, const std::string& at) {
  json manifest = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!manifest.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(at, ": the repo-server rendered something that is not a JSON object"));
  }
  const std::string api_version = StringAt(manifest, "apiVersion");
  const std::string kind = StringAt(manifest, "kind");
  const json& meta = ObjectAt(manifest, "metadata");
  const std::string name = StringAt(meta, "name");
  if (api_version.empty() || kind.empty() || name.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(at, ": needs apiVersion, kind and metadata.name (got apiVersion '",
                     api_version, "', kind '", kind, "', name '", name, "')"));
  }
  const size_t slash = api_version.find('/');
  const std::string group = slash == std::string::npos ? "" : api_version.substr(0, slash);
  const std::string version =
      slash == std::string::npos ? api_version : api_version.substr(slash + 1);

  cloudevents::ManifestConfigOption config;
  config.resource_identifier = {.group = group,
                                .resource = GuessResourceOf(kind),
                                .name = name,
                                .namespace_ = StringAt(meta, "namespace")};
  config.feedback_rules = status_feedback::FeedbackRulesFor(group, version, kind);
  cloudevents::ServerSideApplyConfig ssa;
  ssa.force = true;
  ssa.field_manager = kFieldManager;
  config.update_strategy =
      cloudevents::UpdateStrategy{.type = std::string(cloudevents::kUpdateStrategyServerSideApply),
                                  .server_side_apply = std::move(ssa)};
  return std::make_pair(std::move(manifest), std::move(config));
}

}  // namespace

std::string GuessResourceOf(std::string_view kind) {
  std::string resource = absl::AsciiStrToLower(std::string(kind));
  if (resource.empty() || resource == "endpoints") {
    return resource;
  }
  if (resource.back() == 's') {
    return resource + "es";
  }
  if (resource.back() == 'y' && resource.size() > 1 && !IsVowel(resource[resource.size() - 2])) {
    resource.back() = 'i';
    return resource + "es";
  }
  return resource + "s";
}

absl::StatusOr<Dispatch> BuildManifestDispatch(const json& hub_app,
                                               const std::vector<std::string>& manifests,
                                               const PayloadSettings& settings) {
  absl::StatusOr<Dispatch> identity = DispatchIdentityOf(hub_app, settings);
  if (!identity.ok()) {
    return identity.status();
  }
  Dispatch d = *std::move(identity);
  std::vector<json> parsed_manifests;
  std::vector<cloudevents::ManifestConfigOption> configs;
  parsed_manifests.reserve(manifests.size());
  configs.reserve(manifests.size());
  for (size_t i = 0; i < manifests.size(); ++i) {
    auto parsed = ManifestAndConfig(manifests[i], absl::StrCat("manifests[", i, "]"));
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("Application ", d.hub_namespace, "/",
                                                     d.hub_name, ": ", parsed.status().message()));
    }
    parsed_manifests.push_back(std::move(parsed->first));
    configs.push_back(std::move(parsed->second));
  }
  // The agent applies them in the bundle's order: Argo CD's sync order, not the repo-server's.
  d.bundle.manifests.reserve(manifests.size());
  d.bundle.manifest_configs.reserve(manifests.size());
  for (const size_t i : SyncOrder(parsed_manifests)) {
    d.bundle.manifests.push_back(std::move(parsed_manifests[i]));
    d.bundle.manifest_configs.push_back(std::move(configs[i]));
  }
  // Foreground: the agent deletes every applied object and waits for them before the bundle goes,
  // so the status sink's Deleted (and the hub finalizer's release) means the spoke is clean.
  cloudevents::DeleteOption foreground;
  foreground.propagation_policy = "Foreground";
  d.bundle.delete_option = std::move(foreground);
  d.work_meta.annotations[kDeliveryAnnotation] = kDeliveryManifests;
  d.payload_hash = PayloadHashOf(d.bundle, d.work_meta);
  d.request_free_hash = d.payload_hash;  // nothing of the hub's operation or refresh is sent
  return d;
}

}  // namespace mmi::dispatcher::manifests
