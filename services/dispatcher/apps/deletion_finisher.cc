#include "services/dispatcher/apps/deletion_finisher.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "services/dispatcher/apps/decision.h"
#include "services/dispatcher/apps/finalizers.h"
#include "services/dispatcher/apps/hub_writes.h"
#include "services/dispatcher/apps/internal/reconciler_log.h"

namespace mmi::dispatcher {
namespace {

using store::DeletionState;

}  // namespace

void DeletionFinisher::OnConfirmed(TrackedResource& t) {
  if (t.state == DeletionState::kLive) {
    // A confirmation for something we still consider live can only be stale; the store row
    // says otherwise only if the status sink saw a Deleted for a resource we re-created.
    internal::ReconcilerLog().Warn("deletion confirmed for a live resource; ignoring",
                                   {{"resource", t.Key()}});
    return;
  }
  t.state = DeletionState::kDeleteConfirmed;
  if (!swept_) {
    return;  // the caches are not synced yet: the sweep finishes it (with its finalizer)
  }
  if (t.busy) {
    t.requeue = true;
    return;
  }
  Finish(t);
}

void DeletionFinisher::Sweep() {
  swept_ = true;
  std::vector<std::string> confirmed;
  for (auto& [id, t] : deps_.state.resources()) {
    if (t.state == DeletionState::kDeleteConfirmed) {
      confirmed.push_back(id);
    }
  }
  for (const auto& id : confirmed) {
    if (TrackedResource* t = deps_.state.Find(id); t != nullptr && !t->busy) {
      Finish(*t);
    }
  }
}

void DeletionFinisher::Finish(TrackedResource& t) {
  t.busy = true;
  const std::string id = t.id();
  const std::string ns = t.identity.hub_namespace;
  const std::string name = t.identity.hub_name;
  const kube::ObjectPtr app = deps_.apps.Get(ns, name);
  const bool release =
      app != nullptr && DeletionTimestampOf(*app).has_value() && HasResourcesFinalizer(*app);
  deps_.workers.Post([this, id, ns, name, release] {
    absl::Status status = release ? ReleaseFinalizer(deps_.hub, ns, name) : absl::OkStatus();
    const bool released = release && status.ok();
    if (status.ok()) {
      status = deps_.store.Forget(id);
    }
    deps_.loop.Post([this, id, key = absl::StrCat(ns, "/", name), release, released, status] {
      OnFinished(id, key, release, released, status);
    });
  });
}

void DeletionFinisher::OnFinished(const std::string& id, const std::string& key, bool release,
                                  bool released, const absl::Status& status) {
  if (release) {
    deps_.metrics.HubWrite("release_finalizer", released ? "ok" : "error");
  }
  if (!status.ok()) {
    const auto delay = deps_.retry.Next();
    internal::ReconcilerLog().Warn("could not finish a confirmed deletion; retrying",
                                   {{"resource", key}, {"error", std::string(status.message())}});
    if (TrackedResource* t = deps_.state.Find(id); t != nullptr) {
      t->busy = false;
      t->requeue = false;
    }
    deps_.retry_after(key, delay);
    return;
  }
  if (released) {
    deps_.metrics.Decision("finalizer_released");
  }
  internal::ReconcilerLog().Info("deletion finished",
                                 {{"resource", key}, {"finalizer_released", released}});
  // A resync answer built before the deletion may still be queued (up to ~2 min of
  // retries): it must not carry the spec of what is gone. Kept 10 min.
  deps_.state.RememberDeleted(id, deps_.clock.MonotonicNow());
  deps_.state.Untrack(id);
  deps_.enqueue(key);  // a re-created or retargeted Application is dispatched afresh
}

void DeletionFinisher::ReleaseUntracked(const std::string& ns, const std::string& name) {
  deps_.workers.Post([this, ns, name] {
    absl::Status status = ReleaseFinalizer(deps_.hub, ns, name);
    deps_.loop.Post([this, ns, name, status] {
      deps_.metrics.HubWrite("release_finalizer", status.ok() ? "ok" : "error");
      if (!status.ok()) {
        deps_.retry_after(absl::StrCat(ns, "/", name), deps_.retry.Next());
      }
    });
  });
}

}  // namespace mmi::dispatcher
