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

}  // namespace mmi::store
