#include "services/dispatcher/apps/decision_applier.h"

#include <utility>

#include "libs/cloudevents/json_format.h"
#include "libs/cloudevents/resource_id.h"
#include "libs/kube_object/object.h"
#include "services/dispatcher/apps/internal/reconciler_log.h"
#include "services/dispatcher/apps/spec_events.h"

namespace mmi::dispatcher {
namespace {

using nlohmann::json;
using store::DeletionState;
using Action = Decision::Action;

absl::StatusOr<std::string> Encode(const absl::StatusOr<cloudevents::Event>& event) {
  return event.ok() ? cloudevents::EncodeStructuredJson(*event) : event.status();
}

// The outbox event that carries `row` to the broker.
store::OutboxEntry OutboxEventFor(const store::DispatchedResource& row, store::OutboxAction action,
                                  std::string event) {
  store::OutboxEntry e;
  e.resource_id = row.resource_id;
  e.cluster = row.cluster;
  e.action = action;
  e.version = row.version;
  e.payload_hash = row.payload_hash;
  e.event = std::move(event);
  return e;
}

// The resource a Dispatch describes, before anything of it is recorded.
TrackedResource ResourceOf(const Dispatch& d) {
  TrackedResource t;
  t.identity = ResourceIdentity{.resource_id = d.resource_id,
                                .cluster = d.cluster,
                                .work_name = d.work_name,
                                .hub_namespace = d.hub_namespace,
                                .hub_name = d.hub_name};
  t.hub_uid = d.hub_uid;
  if (d.appset) {
    t.appset_namespace = d.appset->namespace_;
    t.appset_name = d.appset->name;
  }
  return t;
}

}  // namespace

DecisionApplier::DecisionApplier(Deps deps, const ReconcilerSettings& settings)
    : deps_(std::move(deps)), settings_(settings) {}

cloudevents::Timestamp DecisionApplier::Now() const {
  return std::chrono::time_point_cast<std::chrono::nanoseconds>(deps_.clock.Now());
}

void DecisionApplier::Apply(const std::string& key, const json* app, TrackedResource* t,
                            const Decision& d, std::vector<PendingChange>& batch) {
  if (d.unpark) {
    deps_.unknown.Unpark(key);
  }
  if (d.requeue || d.action == Action::kWaitWhileBusy) {
    t->requeue = true;
  }
  if (!d.reason.empty()) {
    deps_.metrics.Decision(d.reason);
  }
  switch (d.action) {
    case Action::kNothing:
    case Action::kWaitWhileBusy:
      LogNothing(key, d);
      return;
    case Action::kPublishSpec:
      PublishSpec(key, *app, d, batch);
      return;
    case Action::kRequestDelete:
      RequestDelete(*t, d, batch);
      return;
    case Action::kFinishDeletion:
      if (deps_.loaded()) {
        deps_.finisher.Finish(*t);
      }
      return;
    case Action::kReleaseFinalizer: {
      const auto [ns, name] = kube::SplitObjectKey(key);
      deps_.finisher.ReleaseUntracked(ns, name);
      return;
    }
    case Action::kStripRequest:
      deps_.stripper.Submit(*t, PropagatedRequestOf(*app));
      return;
    case Action::kAdoptStripped:
      t->agent_hash = t->payload_hash;
      t->payload_hash = d.adopted_hash;
      t->request_free_hash.clear();
      return;
    case Action::kPark:
      deps_.unknown.Park(key, d.cluster, *app);
      return;
  }
}

void DecisionApplier::LogNothing(const std::string& key, const Decision& d) {
  if (!d.conflict_with.empty()) {
    internal::ReconcilerLog().Error(
        "two Applications map to the same work name; skipping the second",
        {{"resource", key}, {"other", d.conflict_with}, {"work", d.why}});
  } else if (d.reason == "invalid") {
    internal::ReconcilerLog().Warn("Application cannot be dispatched",
                                   {{"resource", key}, {"error", d.why}});
  } else if (d.reason == "skipped_local_cluster") {
    internal::ReconcilerLog().Debug("skipping an Application for local-cluster",
                                    {{"resource", key}, {"cluster", d.cluster}});
  }
}

void DecisionApplier::PublishSpec(const std::string& key, const json& app, const Decision& d,
                                  std::vector<PendingChange>& batch) {
  const Dispatch& dispatch = *d.dispatch;
  const int32_t wire_version = settings_.version_mode == VersionMode::kMaestro ? 0 : d.version;
  auto event = MakeSpecEvent(dispatch, settings_.payload.source_id, d.create, wire_version,
                             d.version, cloudevents::NewUuidV4(), Now());
  absl::StatusOr<std::string> encoded = Encode(event);
  if (!encoded.ok()) {
    deps_.metrics.Decision("invalid");
    internal::ReconcilerLog().Warn(
        "Application payload cannot be encoded",
        {{"resource", key}, {"error", std::string(encoded.status().message())}});
    return;
  }
  TrackedResource resource = ResourceOf(dispatch);
  PendingChange pc;
  store::DispatchedResource& row = pc.change.resource;
  resource.version = d.version;
  resource.payload_hash = dispatch.payload_hash;
  row = resource.Row(DeletionState::kLive);
  row.delivery = d.delivery;
  row.payload = event->data.value_or("");
  row.metadata = event->MetadataJson().value_or("");
  pc.change.event =
      OutboxEventFor(row, d.create ? store::OutboxAction::kCreate : store::OutboxAction::kUpdate,
                     *std::move(encoded));
  pc.event = *std::move(event);
  pc.change.manifest_render = d.manifest_render;
  if (dispatch.carries_operation || dispatch.carries_refresh) {
    pc.strip = PropagatedRequestOf(app);
    pc.request_free_hash = dispatch.request_free_hash;
  }
  if (d.create) {
    // Tracked from now on; its hash and version are set once recorded (ChangeRecorder).
    resource.version = 0;
    resource.payload_hash.clear();
    resource.busy = true;
    deps_.state.ForgetDeleted(row.resource_id);  // dispatched afresh
    deps_.state.Track(std::move(resource));
    pc.created_entry = true;
  } else {
    TrackedResource* tracked = deps_.state.FindByKey(key);
    tracked->busy = true;
    tracked->republish = false;
    if (d.republish) {
      ++tracked->ack_republishes;
      tracked->ack_republished_at = deps_.clock.MonotonicNow();
    } else {
      tracked->ack_republishes = 0;  // new content: a new acknowledgement to wait for
      tracked->ack_republished_at.reset();
    }
  }
  deps_.metrics.Decision(d.create ? "create" : d.republish ? "republish" : "update");
  if (internal::ReconcilerLog().Enabled(
          log::Level::kDebug)) {  // its fields cost on every dispatch otherwise
    internal::ReconcilerLog().Debug(
        d.create ? "create" : "update",
        {{"resource", key}, {"cluster", dispatch.cluster}, {"version", d.version}});
  }
  batch.push_back(std::move(pc));
}

void DecisionApplier::RequestDelete(TrackedResource& t, const Decision& d,
                                    std::vector<PendingChange>& batch) {
  if (d.resend) {
    // delete_published_at and delete_resends move on when the resend is published
    // (ChangeRecorder): a resend whose Record fails is due again at once on its retry.
    deps_.metrics.Decision("delete_resent");
    internal::ReconcilerLog().Info(
        "no deletion confirmation yet; sending the delete request again",
        {{"resource", t.Key()}, {"cluster", t.identity.cluster}, {"resend", t.delete_resends + 1}});
  }
  absl::StatusOr<cloudevents::Event> event =
      MakeDeleteEvent(t.identity, settings_.payload.source_id, t.version,
                      d.deletion_time.value_or(Now()), cloudevents::NewUuidV4(), Now());
  absl::StatusOr<std::string> encoded = Encode(event);
  if (!encoded.ok()) {
    // Only identities we built ourselves go in here: a failure is a bug.
    internal::ReconcilerLog().Error(
        "cannot encode a delete request",
        {{"resource", t.Key()}, {"error", std::string(encoded.status().message())}});
    return;
  }
  deps_.state.MarkDeleting(t.id());
  PendingChange pc;
  pc.change.resource = t.Row(DeletionState::kDeleteRequested);
  pc.change.event =
      OutboxEventFor(pc.change.resource, store::OutboxAction::kDelete, *std::move(encoded));
  pc.event = *std::move(event);
  t.busy = true;
  deps_.metrics.Decision("delete");
  internal::ReconcilerLog().Info("deletion requested",
                                 {{"resource", t.Key()}, {"cluster", t.identity.cluster}});
  batch.push_back(std::move(pc));
}

}  // namespace mmi::dispatcher
