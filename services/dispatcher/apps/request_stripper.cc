#include "services/dispatcher/apps/request_stripper.h"

#include <utility>

#include "services/dispatcher/apps/hub_writes.h"
#include "services/dispatcher/apps/internal/reconciler_log.h"

namespace mmi::dispatcher {
void RequestStripper::Submit(TrackedResource& t, PropagatedRequest request) {
  if (request.empty()) {
    return;
  }
  t.stripping = true;
  const std::string id = t.id();
  const std::string key = t.Key();
  deps_.workers.Post([this, id, key, ns = t.identity.hub_namespace, name = t.identity.hub_name,
                      request = std::move(request)] {
    absl::Status status = StripRequest(deps_.hub, ns, name, request);
    deps_.loop.Post([this, id, key, status] { OnStripped(id, key, status); });
  });
}

void RequestStripper::OnStripped(const std::string& id, const std::string& key,
                                 const absl::Status& status) {
  if (TrackedResource* t = deps_.state.Find(id); t != nullptr) {
    t->stripping = false;
  }
  if (status.ok()) {
    deps_.metrics.HubWrite("strip_operation", "ok");
    internal::ReconcilerLog().Info(
        "removed the propagated operation/refresh from the hub Application", {{"resource", key}});
    return;
  }
  if (absl::IsFailedPrecondition(status) || absl::IsNotFound(status)) {
    deps_.metrics.HubWrite("strip_operation", "conflict");
    return;  // a newer request arrived (its own event follows) or the app is gone
  }
  deps_.metrics.HubWrite("strip_operation", "error");
  const auto delay = deps_.retry.Next();
  internal::ReconcilerLog().Warn(
      "could not remove operation/refresh from the hub Application; retrying",
      {{"resource", key}, {"error", std::string(status.message())}});
  deps_.retry_after(key, delay);
}

}  // namespace mmi::dispatcher
