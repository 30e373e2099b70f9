#include "libs/store/dispatch_store.h"

namespace mmi::store {

std::string_view OutboxActionName(OutboxAction action) {
  switch (action) {
    case OutboxAction::kCreate:
      return "create";
    case OutboxAction::kUpdate:
      return "update";
    case OutboxAction::kDelete:
      return "delete";
  }
  return "update";
}

std::string_view DeliveryName(Delivery delivery) {
  switch (delivery) {
    case Delivery::kApplication:
      return "application";
    case Delivery::kManifests:
      return "manifests";
    case Delivery::kReleasingApplication:
      return "releasing_application";
    case Delivery::kOrphaningManifests:
      return "orphaning_manifests";
  }
  return "application";
}

}  // namespace mmi::store
