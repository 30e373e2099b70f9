#include "services/dispatcher/manifests/delivery_mode.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "libs/argocd_repo/request_builder.h"

namespace mmi::dispatcher::manifests {

using nlohmann::json;

absl::StatusOr<DeliveryMode> DeliveryModeOf(const json& hub_application) {
  const json::json_pointer annotations("/metadata/annotations");
  const json* value = nullptr;
  if (hub_application.is_object() && hub_application.contains(annotations)) {
    const json& all = hub_application.at(annotations);
    if (all.is_object()) {
      if (auto it = all.find(std::string(kDeliveryAnnotation)); it != all.end()) {
        value = &*it;
      }
    }
  }
  const std::string text =
      value != nullptr && value->is_string() ? value->get<std::string>() : std::string();
  if (value == nullptr || (value->is_string() && text == kDeliveryApplication)) {
    return DeliveryMode::kApplication;
  }
  if (!value->is_string() || text != kDeliveryManifests) {
    // Exact values only, as Kubernetes compares label and annotation values: a typo must not
    // silently pick a mode.
    return absl::InvalidArgumentError(
        absl::StrCat("metadata.annotations[", kDeliveryAnnotation, "]: unknown delivery mode ",
                     value->dump(), "; use \"", kDeliveryManifests, "\" or \"",
                     kDeliveryApplication, "\" (or leave the annotation out)"));
  }
  // The request builder is what will render the source, so its refusals are exactly the sources
  // this mode cannot render; the settings do not change what it refuses.
  absl::StatusOr<argocd_repo::ManifestRequest> request =
      argocd_repo::BuildManifestRequest(hub_application, "", argocd_repo::RenderSettings{});
  if (!request.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("manifest delivery (", kDeliveryAnnotation, ": ", kDeliveryManifests,
                     ") cannot render this Application: ", request.status().message()));
  }
  return DeliveryMode::kManifests;
}

}  // namespace mmi::dispatcher::manifests
