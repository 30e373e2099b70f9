// Reconciler::Apply(): carries out what Decide() said, on the dispatch state, the store batch
// and (on the worker pool) the hub.
#include <utility>

#include "absl/strings/str_cat.h"
#include "libs/cloudevents/json_format.h"
#include "libs/cloudevents/resource_id.h"
#include "libs/common/log.h"
#include "libs/kube/object.h"
#include "services/dispatcher/apps/finalizers.h"
#include "services/dispatcher/apps/reconciler.h"

namespace mmi::dispatcher {
namespace {

using nlohmann::json;
using store::DeletionState;
using Action = Decision::Action;

const log::Logger& Log() {
  static const log::Logger logger("dispatcher.reconciler");
  return logger;
}

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

bool Reconciler::Reconcile(const std::string& key, bool absence_is_final,
                           std::vector<PendingChange>& batch) {
  const auto [ns, name] = kube::SplitObjectKey(key);
  const kube::ObjectPtr app = apps_.Get(ns, name);
  if (app == nullptr && !absence_is_final) {
    return false;
  }
  TrackedResource* t = state_.FindByKey(key);
  const Observation seen{.key = key,
                         .app = app.get(),
                         .tracked = t,
                         .state = &state_,
                         .clusters = &clusters_,
                         .now = clock_.MonotonicNow()};
  Apply(key, app.get(), t, Decide(seen, settings_), batch);
  return true;
}

void Reconciler::Apply(const std::string& key, const json* app, TrackedResource* t,
                       const Decision& d, std::vector<PendingChange>& batch) {
  if (d.unpark) {
    unknown_.Unpark(key);
  }
  if (d.requeue || d.action == Action::kWaitWhileBusy) {
    t->requeue = true;
  }
  if (!d.reason.empty()) {
    metrics_.Decision(d.reason);
  }
  switch (d.action) {
    case Action::kNothing:
    case Action::kWaitWhileBusy:
      if (!d.conflict_with.empty()) {
        Log().Error("two Applications map to the same work name; skipping the second",
                    {{"resource", key}, {"other", d.conflict_with}, {"work", d.why}});
      } else if (d.reason == "invalid") {
        Log().Warn("Application cannot be dispatched", {{"resource", key}, {"error", d.why}});
      } else if (d.reason == "skipped_local_cluster") {
        Log().Debug("skipping an Application for local-cluster",
                    {{"resource", key}, {"cluster", d.cluster}});
      }
      return;
    case Action::kPublishSpec:
      PublishSpec(key, *app, d, batch);
      return;
    case Action::kRequestDelete:
      if (d.resend) {
        // delete_published_at and delete_resends move on when the resend is published
        // (OnPublished): a resend whose Record fails is due again at once on its retry.
        metrics_.Decision("delete_resent");
        Log().Info("no deletion confirmation yet; sending the delete request again",
                   {{"resource", t->Key()},
                    {"cluster", t->identity.cluster},
                    {"resend", t->delete_resends + 1}});
      }
      RequestDelete(*t, d.deletion_time.value_or(Now()), batch);
      return;
    case Action::kFinishDeletion:
      if (!loaded_.load()) {
        // Decided while the state loads: the load may still read the row and track it again
        // once forgotten; the sweep after the load finishes it.
        return;
      }
      FinishDeletion(*t);
      return;
    case Action::kReleaseFinalizer: {
      const auto [ns, name] = kube::SplitObjectKey(key);
      SubmitReleaseUntracked(ns, name);
      return;
    }
    case Action::kStripRequest:
      SubmitStrip(*t, PropagatedRequestOf(*app));
      return;
    case Action::kPark:
      unknown_.Park(key, d.cluster, *app);
      return;
  }
}

void Reconciler::PublishSpec(const std::string& key, const json& app, const Decision& d,
                             std::vector<PendingChange>& batch) {
  const Dispatch& dispatch = *d.dispatch;
  const int32_t wire_version = settings_.version_mode == VersionMode::kMaestro ? 0 : d.version;
  auto event = MakeSpecEvent(dispatch, settings_.payload.source_id, d.create, wire_version,
                             cloudevents::NewUuidV4(), Now());
  absl::StatusOr<std::string> encoded = Encode(event);
  if (!encoded.ok()) {
    metrics_.Decision("invalid");
    Log().Warn("Application payload cannot be encoded",
               {{"resource", key}, {"error", std::string(encoded.status().message())}});
    return;
  }
  TrackedResource resource = ResourceOf(dispatch);
  PendingChange pc;
  store::DispatchedResource& row = pc.change.resource;
  resource.version = d.version;
  resource.payload_hash = dispatch.payload_hash;
  row = resource.Row(DeletionState::kLive);
  row.payload = event->data.value_or("");
  row.metadata = event->MetadataJson().value_or("");
  pc.change.event =
      OutboxEventFor(row, d.create ? store::OutboxAction::kCreate : store::OutboxAction::kUpdate,
                     *std::move(encoded));
  pc.event = *std::move(event);
  if (dispatch.carries_operation || dispatch.carries_refresh) {
    pc.strip = PropagatedRequestOf(app);
  }
  if (d.create) {
    // Tracked from now on; its hash and version are set once recorded (OnRecorded).
    resource.version = 0;
    resource.payload_hash.clear();
    resource.busy = true;
    state_.ForgetDeleted(row.resource_id);  // dispatched afresh
    state_.Track(std::move(resource));
    pc.created_entry = true;
  } else {
    state_.FindByKey(key)->busy = true;
  }
  metrics_.Decision(d.create ? "create" : "update");
  if (Log().Enabled(log::Level::kDebug)) {  // its fields cost on every dispatch otherwise
    Log().Debug(d.create ? "create" : "update",
                {{"resource", key}, {"cluster", dispatch.cluster}, {"version", d.version}});
  }
  batch.push_back(std::move(pc));
}

void Reconciler::RequestDelete(TrackedResource& t, cloudevents::Timestamp deletion_time,
                               std::vector<PendingChange>& batch) {
  absl::StatusOr<cloudevents::Event> event =
      MakeDeleteEvent(t.identity, settings_.payload.source_id, t.version, deletion_time,
                      cloudevents::NewUuidV4(), Now());
  absl::StatusOr<std::string> encoded = Encode(event);
  if (!encoded.ok()) {
    // Only identities we built ourselves go in here: a failure is a bug.
    Log().Error("cannot encode a delete request",
                {{"resource", t.Key()}, {"error", std::string(encoded.status().message())}});
    return;
  }
  state_.MarkDeleting(t.id());
  PendingChange pc;
  pc.change.resource = t.Row(DeletionState::kDeleteRequested);
  pc.change.event =
      OutboxEventFor(pc.change.resource, store::OutboxAction::kDelete, *std::move(encoded));
  pc.event = *std::move(event);
  t.busy = true;
  metrics_.Decision("delete");
  Log().Info("deletion requested", {{"resource", t.Key()}, {"cluster", t.identity.cluster}});
  batch.push_back(std::move(pc));
}

// ---------------------------------------------------------------------------------------------
// Hub writes

void Reconciler::SubmitStrip(TrackedResource& t, PropagatedRequest request) {
  if (request.empty()) {
    return;
  }
  t.stripping = true;
  const std::string id = t.id();
  const std::string key = t.Key();
  workers_.Post([this, id, key, ns = t.identity.hub_namespace, name = t.identity.hub_name,
                 request = std::move(request)] {
    absl::Status status = StripRequest(hub_, ns, name, request);
    loop_.Post([this, id, key, status] {
      if (TrackedResource* t = state_.Find(id); t != nullptr) {
        t->stripping = false;
      }
      if (status.ok()) {
        metrics_.HubWrite("strip_operation", "ok");
        Log().Info("removed the propagated operation/refresh from the hub Application",
                   {{"resource", key}});
        return;
      }
      if (absl::IsFailedPrecondition(status) || absl::IsNotFound(status)) {
        metrics_.HubWrite("strip_operation", "conflict");
        return;  // a newer request arrived (its own event follows) or the app is gone
      }
      metrics_.HubWrite("strip_operation", "error");
      const auto delay = retry_backoff_.Next();
      Log().Warn("could not remove operation/refresh from the hub Application; retrying",
                 {{"resource", key}, {"error", std::string(status.message())}});
      EnqueueAfter(key, delay);
    });
  });
}

void Reconciler::FinishDeletion(TrackedResource& t) {
  t.busy = true;
  const std::string id = t.id();
  const std::string ns = t.identity.hub_namespace;
  const std::string name = t.identity.hub_name;
  const kube::ObjectPtr app = apps_.Get(ns, name);
  const bool release =
      app != nullptr && DeletionTimestampOf(*app).has_value() && HasResourcesFinalizer(*app);
  workers_.Post([this, id, ns, name, release] {
    absl::Status status = release ? ReleaseFinalizer(hub_, ns, name) : absl::OkStatus();
    const bool released = release && status.ok();
    if (status.ok()) {
      status = store_.Forget(id);
    }
    loop_.Post([this, id, key = absl::StrCat(ns, "/", name), release, released, status] {
      if (release) {
        metrics_.HubWrite("release_finalizer", released ? "ok" : "error");
      }
      if (!status.ok()) {
        const auto delay = retry_backoff_.Next();
        Log().Warn("could not finish a confirmed deletion; retrying",
                   {{"resource", key}, {"error", std::string(status.message())}});
        if (TrackedResource* t = state_.Find(id); t != nullptr) {
          t->busy = false;
          t->requeue = false;
        }
        EnqueueAfter(key, delay);
        return;
      }
      if (released) {
        metrics_.Decision("finalizer_released");
      }
      Log().Info("deletion finished", {{"resource", key}, {"finalizer_released", released}});
      // A resync answer built before the deletion may still be queued (up to ~2 min of
      // retries): it must not carry the spec of what is gone. Kept 10 min.
      state_.RememberDeleted(id, clock_.MonotonicNow());
      state_.Untrack(id);
      Enqueue(key);  // a re-created or retargeted Application is dispatched afresh
    });
  });
}

void Reconciler::SubmitReleaseUntracked(const std::string& ns, const std::string& name) {
  workers_.Post([this, ns, name] {
    absl::Status status = ReleaseFinalizer(hub_, ns, name);
    loop_.Post([this, ns, name, status] {
      metrics_.HubWrite("release_finalizer", status.ok() ? "ok" : "error");
      if (!status.ok()) {
        EnqueueAfter(absl::StrCat(ns, "/", name), retry_backoff_.Next());
      }
    });
  });
}

}  // namespace mmi::dispatcher
