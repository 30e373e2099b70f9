#include "services/dispatcher/apps/decision.h"

#include <algorithm>
#include <utility>

#include "libs/cloudevents/json_format.h"
#include "services/dispatcher/apps/finalizers.h"

namespace mmi::dispatcher {
namespace {

using nlohmann::json;
using store::DeletionState;
using Action = Decision::Action;

Decision Make(Action action, std::string_view reason = {}) {
  Decision d;
  d.action = action;
  d.reason = reason;
  return d;
}

// Past its resend delay with nothing in flight: the delete request goes out again.
bool ResendDue(const TrackedResource& t, const ReconcilerSettings& settings,
               std::chrono::steady_clock::time_point now) {
  return !t.busy && t.unpublished == 0 && t.delete_published_at.has_value() &&
         now - *t.delete_published_at >= DeleteResendDelay(settings, t.delete_resends);
}

// The resource of an Application that is gone, being deleted or retargeted: request its
// deletion, send the request again, wait for the confirmation, or finish the deletion.
Decision Retire(const TrackedResource& t, std::optional<cloudevents::Timestamp> deletion_time,
                const ReconcilerSettings& settings, std::chrono::steady_clock::time_point now,
                std::string_view waiting_reason) {
  switch (t.state) {
    case DeletionState::kLive: {
      Decision d = Make(Action::kRequestDelete);
      d.deletion_time = deletion_time;
      return d;
    }
    case DeletionState::kDeleteRequested:
      if (ResendDue(t, settings, now)) {
        Decision d = Make(Action::kRequestDelete);
        d.resend = true;
        return d;
      }
      return Make(Action::kNothing, waiting_reason);
    case DeletionState::kDeleteConfirmed:
      return Make(Action::kFinishDeletion);
  }
  return Make(Action::kNothing);
}

Decision Invalid(std::string why) {
  Decision d = Make(Action::kNothing, "invalid");
  d.why = std::move(why);
  return d;
}

// A live pull-model Application whose cluster exists: create, update or nothing.
Decision DecideSpec(const Observation& seen, const json& app, const ReconcilerSettings& settings) {
  auto dispatch = seen.prepared != nullptr ? absl::StatusOr<Dispatch>(*seen.prepared)
                                           : BuildDispatch(app, settings.payload);
  if (!dispatch.ok()) {
    return Invalid(std::string(dispatch.status().message()));
  }
  const TrackedResource* t = seen.tracked;
  if (t == nullptr) {
    if (const TrackedResource* other = seen.state->Find(dispatch->resource_id); other != nullptr) {
      Decision d = Invalid(dispatch->work_name);
      d.conflict_with = other->Key();
      return d;
    }
  }
  const bool carries = dispatch->carries_operation || dispatch->carries_refresh;
  if (t != nullptr && !carries && !t->request_free_hash.empty() &&
      t->request_free_hash == dispatch->payload_hash) {
    // Sending the stripped payload would make the agent's server-side apply remove `operation`
    // from the spoke while Argo CD may still be running it (hub-apis §5.5).
    Decision d = Make(Action::kAdoptStripped, "request_stripped");
    d.adopted_hash = dispatch->payload_hash;
    return d;
  }
  if (t != nullptr && carries && !t->agent_hash.empty() &&
      t->agent_hash == dispatch->payload_hash) {
    // The same request again, and the agent still holds the payload that carried the last one:
    // it would skip an identical payload. The stripped payload goes first; the request follows.
    if (dispatch->request_free_hash == t->payload_hash) {
      Decision d = Make(Action::kPublishSpec);
      d.version = t->version + 1;
      d.dispatch = WithoutRequest(*std::move(dispatch));
      d.requeue = true;
      return d;
    }
  }
  if (t != nullptr && t->payload_hash == dispatch->payload_hash && t->republish &&
      t->unpublished == 0) {
    // Accepted by the broker but never applied (ack_check.h): the same content as a new version,
    // which changes the stamped annotation, so Maestro does not fold it into "unchanged".
    Decision d = Make(Action::kPublishSpec);
    d.version = t->version + 1;
    d.republish = true;
    d.dispatch = *std::move(dispatch);
    return d;
  }
  if (t != nullptr && t->payload_hash == dispatch->payload_hash) {
    // The propagated request may still sit on the hub (a strip failed, or we restarted).
    return Make(
        carries && t->unpublished == 0 && !t->stripping ? Action::kStripRequest : Action::kNothing,
        "unchanged");
  }
  Decision d = Make(Action::kPublishSpec);
  d.create = t == nullptr;
  d.version = d.create ? 1 : t->version + 1;
  d.dispatch = *std::move(dispatch);
  return d;
}

Decision DecideDeleted(const Observation& seen, const json& app, const std::string& deletion,
                       const ReconcilerSettings& settings) {
  if (seen.tracked == nullptr) {
    // Never dispatched (or already cleaned up): nothing to wait for.
    return Make(HasResourcesFinalizer(app) ? Action::kReleaseFinalizer : Action::kNothing);
  }
  auto ts = cloudevents::ParseTimestamp(deletion);
  return Retire(*seen.tracked, ts.ok() ? std::optional(*ts) : std::nullopt, settings, seen.now,
                "waiting_deletion");
}

Decision WithUnpark(Decision d) {
  d.unpark = true;
  return d;
}

}  // namespace

std::chrono::milliseconds DeleteResendDelay(const ReconcilerSettings& settings, int resends) {
  return settings.delete_resend_after * (int64_t{1} << std::clamp(resends, 0, 4));
}

std::optional<std::string> DeletionTimestampOf(const json& app) {
  auto meta = app.find("metadata");
  if (meta == app.end() || !meta->is_object()) {
    return std::nullopt;
  }
  auto ts = meta->find("deletionTimestamp");
  if (ts == meta->end() || !ts->is_string()) {
    return std::nullopt;
  }
  return ts->get<std::string>();
}

Decision Decide(const Observation& seen, const ReconcilerSettings& settings) {
  const TrackedResource* t = seen.tracked;
  if (t != nullptr && t->busy) {
    return Make(Action::kWaitWhileBusy);
  }
  if (seen.app == nullptr) {
    return WithUnpark(t == nullptr
                          ? Make(Action::kNothing)
                          : Retire(*t, std::nullopt, settings, seen.now, "waiting_deletion"));
  }
  const json& app = *seen.app;
  const auto cluster = PullModelCluster(app);
  if (!cluster) {
    // Not (or no longer) pull model: left alone, as the upstream controller does.
    return WithUnpark(Make(Action::kNothing));
  }
  if (t != nullptr && t->identity.cluster != *cluster) {
    // Retargeted: retire the old resource first; the key is decided again once it is gone.
    Decision d = Retire(*t, std::nullopt, settings, seen.now, "");
    d.requeue = true;
    return d;
  }
  if (const auto deletion = DeletionTimestampOf(app)) {
    return WithUnpark(DecideDeleted(seen, app, *deletion, settings));
  }
  if (t != nullptr && t->state != DeletionState::kLive) {
    // A deletion of the same resource is still under way (re-created Application).
    Decision d = t->state == DeletionState::kDeleteRequested && ResendDue(*t, settings, seen.now)
                     ? Retire(*t, std::nullopt, settings, seen.now, "")
                     : Make(Action::kNothing, "waiting_deletion");
    d.requeue = true;
    return d;
  }
  if (settings.skip_local_cluster && seen.clusters->IsLocal(*cluster)) {
    Decision d = Make(Action::kNothing, "skipped_local_cluster");
    d.cluster = *cluster;
    return WithUnpark(std::move(d));
  }
  if (!seen.clusters->Known(*cluster)) {
    Decision d = Make(Action::kPark);
    d.cluster = *cluster;
    return d;
  }
  return WithUnpark(DecideSpec(seen, app, settings));
}

}  // namespace mmi::dispatcher
