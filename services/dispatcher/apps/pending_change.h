// PendingChange: one change for the store, decided on the reconcile loop (DecisionApplier) and
// recorded in a batch (ChangeRecorder): the resource's new row and its outbox event.
#pragma once

#include <optional>

#include "libs/cloudevents/event.h"
#include "libs/store/dispatch_store.h"
#include "services/dispatcher/apps/propagated_request.h"

namespace mmi::dispatcher {

struct PendingChange {
  store::DispatchChange change;
  // change.event.event decoded: the outbox publishes it without decoding the text again.
  std::optional<cloudevents::Event> event;
  // The resource was first tracked for this change (untracked again when the store refuses it).
  bool created_entry = false;
  // Removed from the hub Application once the event is published.
  std::optional<PropagatedRequest> strip;
  // With `strip`: the payload's hash without the request (Dispatch::request_free_hash).
  std::string request_free_hash;
};

}  // namespace mmi::dispatcher
