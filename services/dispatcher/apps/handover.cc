#include "services/dispatcher/apps/handover.h"

#include <string>
#include <string_view>
#include <utility>

namespace mmi::dispatcher {

using store::Delivery;

store::Delivery NextDelivery(bool wants_manifests, std::optional<store::Delivery> recorded,
                             bool acknowledged) {
  if (!recorded.has_value()) {
    return wants_manifests ? Delivery::kManifests : Delivery::kApplication;
  }
  switch (*recorded) {
    case Delivery::kApplication:
      return wants_manifests ? Delivery::kReleasingApplication : Delivery::kApplication;
    case Delivery::kReleasingApplication:
      if (!wants_manifests) {
        return Delivery::kApplication;  // switched back: the finalizer returns
      }
      return acknowledged ? Delivery::kManifests : Delivery::kReleasingApplication;
    case Delivery::kManifests:
      return wants_manifests ? Delivery::kManifests : Delivery::kOrphaningManifests;
    case Delivery::kOrphaningManifests:
      if (wants_manifests) {
        // Switched back: the agent sets its owner references again on the next apply.
        return Delivery::kManifests;
      }
      return acknowledged ? Delivery::kApplication : Delivery::kOrphaningManifests;
  }
  return wants_manifests ? Delivery::kManifests : Delivery::kApplication;
}

bool IsFirstStep(store::Delivery delivery) {
  return delivery == Delivery::kReleasingApplication || delivery == Delivery::kOrphaningManifests;
}

bool DeliversManifests(store::Delivery delivery) {
  return delivery == Delivery::kManifests || delivery == Delivery::kOrphaningManifests;
}

nlohmann::json WithoutPruningFinalizers(nlohmann::json hub_app) {
  auto meta = hub_app.find("metadata");
  if (meta == hub_app.end() || !meta->is_object()) {
    return hub_app;
  }
  auto finalizers = meta->find("finalizers");
  if (finalizers == meta->end() || !finalizers->is_array()) {
    return hub_app;
  }
  nlohmann::json kept = nlohmann::json::array();
  for (const auto& f : *finalizers) {
    const std::string_view name =
        f.is_string() ? std::string_view(f.get_ref<const std::string&>()) : std::string_view();
    if (name == kResourcesFinalizer || name.starts_with(std::string(kResourcesFinalizer) + "/") ||
        name == "post-delete-finalizer.argocd.argoproj.io" ||
        name.starts_with("post-delete-finalizer.argocd.argoproj.io/")) {
      continue;
    }
    kept.push_back(f);
  }
  *finalizers = std::move(kept);
  return hub_app;
}

Dispatch Orphaning(Dispatch manifests) {
  manifests.bundle.delete_option.emplace();
  manifests.bundle.delete_option->propagation_policy = "Orphan";
  manifests.payload_hash = PayloadHashOf(manifests.bundle, manifests.work_meta);
  manifests.request_free_hash = manifests.payload_hash;
  return manifests;
}

}  // namespace mmi::dispatcher
