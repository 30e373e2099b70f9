#include "services/dispatcher/reconciler.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "libs/cloudevents/json_format.h"
#include "libs/cloudevents/resource_id.h"
#include "libs/common/log.h"

namespace mmi::dispatcher {
namespace {

using nlohmann::json;
using store::DeletionState;

const log::Logger& Log() {
  static const log::Logger logger("dispatcher.reconciler");
  return logger;
}

std::pair<std::string, std::string> SplitKey(const std::string& key) {
  const auto slash = key.find('/');
  if (slash == std::string::npos) {
    return {"", key};
  }
  return {key.substr(0, slash), key.substr(slash + 1)};
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

json WithoutBookkeeping(const json& app) {
  json copy = app;
  copy.erase("status");
  if (auto meta = copy.find("metadata"); meta != copy.end() && meta->is_object()) {
    meta->erase("resourceVersion");
    meta->erase("generation");
    meta->erase("managedFields");
  }
  return copy;
}

}  // namespace

bool DispatchRelevantChange(const json& old_app, const json& new_app) {
  return WithoutBookkeeping(old_app) != WithoutBookkeeping(new_app);
}

kube::Transform ApplicationTransform() {
  return kube::DropFields({"/status", "/metadata/managedFields"});
}

void AppEventHandler::OnAdd(const kube::ObjectPtr& object, bool /*in_initial_list*/) {
  reconciler_.Enqueue(kube::ObjectKey(*object));
}

void AppEventHandler::OnUpdate(const kube::ObjectPtr& old_object,
                               const kube::ObjectPtr& new_object) {
  if (DispatchRelevantChange(*old_object, *new_object)) {
    reconciler_.Enqueue(kube::ObjectKey(*new_object));
  }
}

void AppEventHandler::OnDelete(const kube::ObjectPtr& last_state) {
  reconciler_.Enqueue(kube::ObjectKey(*last_state));
}

Reconciler::Reconciler(ReconcilerDeps deps, ReconcilerSettings settings)
    : loop_(deps.loop),
      workers_(deps.workers),
      store_(deps.store),
      hub_(deps.hub),
      apps_(deps.apps),
      clusters_(deps.clusters),
      outbox_(deps.outbox),
      metrics_(deps.metrics),
      clock_(deps.clock),
      settings_(std::move(settings)),
      queue_(settings_.queue_capacity),
      retry_backoff_(settings_.retry),
      load_backoff_(settings_.retry) {
  outbox_.SetPublishedHook([this](const store::OutboxEntry& entry) { OnPublished(entry); });
}

cloudevents::Timestamp Reconciler::Now() const {
  return std::chrono::time_point_cast<std::chrono::nanoseconds>(clock_.Now());
}

// ---------------------------------------------------------------------------------------------
// Activation and warm load

void Reconciler::Activate() {
  if (activating_.exchange(true)) {
    return;
  }
  workers_.Post([this] { LoadState(); });
}

void Reconciler::Deactivate() { active_.store(false); }

void Reconciler::LoadState() {
  Loaded loaded;
  absl::Status status = store_.ForEachResource(
      [&](const store::DispatchedResource& r) { loaded.resources.push_back(r); });
  int64_t after = 0;
  while (status.ok()) {
    auto page = store_.PendingOutbox(after, settings_.outbox_recover_page);
    if (!page.ok()) {
      status = page.status();
      break;
    }
    if (page->empty()) {
      break;
    }
    after = page->back().seq;
    const bool last = static_cast<int>(page->size()) < settings_.outbox_recover_page;
    loaded.outbox.insert(loaded.outbox.end(), std::make_move_iterator(page->begin()),
                         std::make_move_iterator(page->end()));
    if (last) {
      break;
    }
  }
  if (!status.ok()) {
    loop_.Post([this, status] {
      const auto delay = load_backoff_.Next();
      Log().Warn("could not load the dispatch state; retrying",
                 {{"error", std::string(status.message())},
                  {"delay_ms", static_cast<int64_t>(delay.count())}});
      loop_.PostAfter(delay, [this] { workers_.Post([this] { LoadState(); }); });
    });
    return;
  }
  loop_.Post([this, loaded = std::move(loaded)]() mutable { InstallState(std::move(loaded)); });
}

void Reconciler::InstallState(Loaded loaded) {
  for (auto& r : loaded.resources) {
    Tracked t;
    t.resource_id = r.resource_id;
    t.cluster = std::move(r.cluster);
    t.hub_namespace = std::move(r.hub_namespace);
    t.hub_name = std::move(r.hub_name);
    t.hub_uid = std::move(r.hub_uid);
    t.work_name = std::move(r.work_name);
    t.appset_namespace = std::move(r.appset_namespace);
    t.appset_name = std::move(r.appset_name);
    t.payload_hash = std::move(r.payload_hash);
    t.version = r.version;
    t.state = r.deletion_state;
    if (t.state != DeletionState::kLive) {
      absl::MutexLock lock(&deleting_mu_);
      deleting_.insert(t.resource_id);
    }
    by_key_[t.Key()] = t.resource_id;
    resources_[r.resource_id] = std::move(t);
  }
  for (const auto& e : loaded.outbox) {
    if (auto it = resources_.find(e.resource_id); it != resources_.end()) {
      ++it->second.unpublished;
    }
  }
  for (const auto& id : early_confirmations_) {
    if (auto it = resources_.find(id);
        it != resources_.end() && it->second.state == DeletionState::kDeleteRequested) {
      it->second.state = DeletionState::kDeleteConfirmed;  // finished by the sweep
    }
  }
  early_confirmations_.clear();
  // Delete requests published before the restart and still unconfirmed: their resend clock
  // starts now (a pending one starts when it is published).
  const auto now = clock_.MonotonicNow();
  for (auto& [id, t] : resources_) {
    if (t.state == DeletionState::kDeleteRequested && t.unpublished == 0) {
      t.delete_published_at = now;
      EnqueueAfter(t.Key(), DeleteResendDelay(0));
    }
  }
  metrics_.tracked().Set(static_cast<double>(resources_.size()));
  Log().Info("dispatch state loaded", {{"resources", static_cast<int64_t>(resources_.size())},
                                       {"outbox", static_cast<int64_t>(loaded.outbox.size())}});
  loaded_.store(true);
  active_.store(true);
  // Events recorded but not accepted before the restart go out first, with their original ids.
  outbox_.Add(std::move(loaded.outbox));
  // Deletions confirmed while we were not running are finished by the first ProcessKeys() that
  // finds the caches synced (SweepConfirmedDeletions), like every other decision.
  EnqueueAll();
  ScheduleProcess();
}

bool Reconciler::CachesSynced() const { return clusters_.synced() && apps_.synced(); }

void Reconciler::SweepConfirmedDeletions() {
  swept_ = true;
  std::vector<std::string> confirmed;
  for (auto& [id, t] : resources_) {
    if (t.state == DeletionState::kDeleteConfirmed) {
      confirmed.push_back(id);
    }
  }
  for (const auto& id : confirmed) {
    if (auto it = resources_.find(id); it != resources_.end() && !it->second.busy) {
      FinishDeletion(it->second);
    }
  }
}

void Reconciler::EnqueueAll() {
  // Every cached Application, and every known resource (its Application may have vanished).
  for (const auto& app : apps_.List()) {
    Enqueue(kube::ObjectKey(*app));
  }
  for (const auto& [key, id] : by_key_) {
    Enqueue(key);
  }
}

// ---------------------------------------------------------------------------------------------
// Key queue

void Reconciler::Enqueue(const std::string& key) {
  const kube::WorkQueue::AddResult added = queue_.Add(key);
  // Dropped on a full queue: a full resync follows once it drained (ProcessKeys).
  metrics_.queue_depth().Set(static_cast<double>(queue_.Len()));
  if (added == kube::WorkQueue::AddResult::kAdded && active_.load() &&
      !process_posted_.exchange(true)) {
    loop_.Post([this] { ProcessKeys(); });
  }
}

void Reconciler::EnqueueAfter(const std::string& key, std::chrono::milliseconds delay) {
  loop_.PostAfter(delay, [this, key] { Enqueue(key); });
}

void Reconciler::ScheduleProcess() {
  if (queue_.Len() == 0 || process_posted_.exchange(true)) {
    return;
  }
  loop_.Post([this] { ProcessKeys(); });
}

size_t Reconciler::queue_depth() const { return queue_.Len(); }

bool Reconciler::busy() const {
  if (inflight_batches_.load() > 0) {
    return true;
  }
  return queue_.Len() > 0 && active_.load();
}

void Reconciler::ProcessKeys() {
  process_posted_.store(false);
  if (!active_.load() || inflight_batches_.load() >= settings_.max_inflight_batches) {
    return;  // OnRecorded schedules again
  }
  if (!CachesSynced()) {
    // Until the initial lists are complete a missing Application may only be unlisted yet.
    loop_.PostAfter(std::chrono::milliseconds(200), [this] { ScheduleProcess(); });
    return;
  }
  if (!swept_) {
    SweepConfirmedDeletions();
  }
  std::vector<std::string> keys;
  while (keys.size() < settings_.batch_size) {
    std::optional<std::string> key = queue_.Get();
    if (!key.has_value()) {
      break;
    }
    keys.push_back(*std::move(key));
  }
  metrics_.queue_depth().Set(static_cast<double>(queue_.Len()));
  const bool resync = queue_.TakeOverflow();
  std::vector<PendingChange> batch;
  for (const auto& key : keys) {
    Reconcile(key, batch);
    queue_.Done(key);
  }
  if (!batch.empty()) {
    FlushBatch(std::move(batch));
  }
  if (resync) {
    Log().Warn("work queue overflowed; resyncing every Application");
    EnqueueAll();
  }
  ScheduleProcess();
}

// ---------------------------------------------------------------------------------------------
// Decisions

Reconciler::Tracked* Reconciler::FindByKey(const std::string& key) {
  auto it = by_key_.find(key);
  if (it == by_key_.end()) {
    return nullptr;
  }
  auto rit = resources_.find(it->second);
  return rit == resources_.end() ? nullptr : &rit->second;
}

bool Reconciler::IsDeleting(const std::string& resource_id) const {
  absl::MutexLock lock(&deleting_mu_);
  return deleting_.contains(resource_id) || recently_deleted_.contains(resource_id);
}

void Reconciler::Untrack(const std::string& resource_id) {
  {
    absl::MutexLock lock(&deleting_mu_);
    deleting_.erase(resource_id);
  }
  auto it = resources_.find(resource_id);
  if (it == resources_.end()) {
    return;
  }
  const std::string key = it->second.Key();
  if (auto kit = by_key_.find(key); kit != by_key_.end() && kit->second == resource_id) {
    by_key_.erase(kit);
  }
  resources_.erase(it);
  metrics_.tracked().Set(static_cast<double>(resources_.size()));
}

void Reconciler::Reconcile(const std::string& key, std::vector<PendingChange>& batch) {
  const auto [ns, name] = SplitKey(key);
  const kube::ObjectPtr app = apps_.Get(ns, name);
  Tracked* t = FindByKey(key);
  if (t != nullptr && t->busy) {
    t->requeue = true;
    return;
  }

  if (app == nullptr) {
    Unpark(key);
    if (t == nullptr) {
      return;
    }
    switch (t->state) {
      case DeletionState::kLive:
        RequestDelete(*t, Now(), batch);
        break;
      case DeletionState::kDeleteRequested:
        if (!ResendDeleteIfDue(*t, batch)) {
          metrics_.Decision("waiting_deletion");
        }
        break;
      case DeletionState::kDeleteConfirmed:
        FinishDeletion(*t);
        break;
    }
    return;
  }

  const auto cluster = PullModelCluster(*app);
  if (!cluster) {
    // Not (or no longer) pull model: left alone, as the upstream controller does.
    Unpark(key);
    return;
  }

  if (t != nullptr && t->cluster != *cluster) {
    // Retargeted: retire the old resource first; the key is reconciled again once it is gone.
    t->requeue = true;
    if (t->state == DeletionState::kLive) {
      RequestDelete(*t, Now(), batch);
    } else if (t->state == DeletionState::kDeleteRequested) {
      ResendDeleteIfDue(*t, batch);
    } else if (t->state == DeletionState::kDeleteConfirmed) {
      FinishDeletion(*t);
    }
    return;
  }

  if (const auto deletion = DeletionTimestampOf(*app)) {
    Unpark(key);
    if (t == nullptr) {
      // Never dispatched (or already cleaned up): nothing to wait for.
      if (HasResourcesFinalizer(*app)) {
        SubmitReleaseUntracked(ns, name);
      }
      return;
    }
    switch (t->state) {
      case DeletionState::kLive: {
        auto ts = cloudevents::ParseTimestamp(*deletion);
        RequestDelete(*t, ts.ok() ? *ts : Now(), batch);
        break;
      }
      case DeletionState::kDeleteRequested:
        if (!ResendDeleteIfDue(*t, batch)) {
          metrics_.Decision("waiting_deletion");
        }
        break;
      case DeletionState::kDeleteConfirmed:
        FinishDeletion(*t);
        break;
    }
    return;
  }

  if (t != nullptr && t->state != DeletionState::kLive) {
    // A deletion of the same resource is still under way (re-created Application).
    t->requeue = true;
    if (t->state != DeletionState::kDeleteRequested || !ResendDeleteIfDue(*t, batch)) {
      metrics_.Decision("waiting_deletion");
    }
    return;
  }

  if (settings_.skip_local_cluster && clusters_.IsLocal(*cluster)) {
    Unpark(key);
    metrics_.Decision("skipped_local_cluster");
    Log().Debug("skipping an Application for local-cluster",
                {{"resource", key}, {"cluster", *cluster}});
    return;
  }
  if (!clusters_.Known(*cluster)) {
    Park(key, *cluster, *app);
    return;
  }
  Unpark(key);

  auto d = BuildDispatch(*app, settings_.payload);
  if (!d.ok()) {
    metrics_.Decision("invalid");
    Log().Warn("Application cannot be dispatched",
               {{"resource", key}, {"error", std::string(d.status().message())}});
    return;
  }
  if (t == nullptr) {
    if (auto other = resources_.find(d->resource_id); other != resources_.end()) {
      metrics_.Decision("invalid");
      Log().Error("two Applications map to the same work name; skipping the second",
                  {{"resource", key}, {"other", other->second.Key()}, {"work", d->work_name}});
      return;
    }
  }
  if (t != nullptr && t->payload_hash == d->payload_hash) {
    metrics_.Decision("unchanged");
    // The propagated request may still sit on the hub (a strip failed, or we restarted).
    if ((d->carries_operation || d->carries_refresh) && t->unpublished == 0 && !t->stripping) {
      SubmitStrip(*t, PropagatedRequestOf(*app));
    }
    return;
  }

  const bool create = t == nullptr;
  const int32_t version = create ? 1 : t->version + 1;
  const int32_t wire_version = settings_.version_mode == VersionMode::kMaestro ? 0 : version;
  auto event = MakeSpecEvent(*d, settings_.payload.source_id, create, wire_version,
                             cloudevents::NewUuidV4(), Now());
  absl::StatusOr<std::string> encoded =
      event.ok() ? cloudevents::EncodeStructuredJson(*event) : event.status();
  if (!encoded.ok()) {
    metrics_.Decision("invalid");
    Log().Warn("Application payload cannot be encoded",
               {{"resource", key}, {"error", std::string(encoded.status().message())}});
    return;
  }

  PendingChange pc;
  store::DispatchedResource& row = pc.change.resource;
  row.resource_id = d->resource_id;
  row.cluster = d->cluster;
  row.hub_namespace = d->hub_namespace;
  row.hub_name = d->hub_name;
  row.hub_uid = d->hub_uid;
  row.work_name = d->work_name;
  if (d->appset) {
    row.appset_namespace = d->appset->namespace_;
    row.appset_name = d->appset->name;
  }
  row.version = version;
  row.payload_hash = d->payload_hash;
  row.payload = event->data.value_or("");
  row.metadata = event->MetadataJson().value_or("");
  row.deletion_state = DeletionState::kLive;
  store::OutboxEntry& e = pc.change.event;
  e.resource_id = d->resource_id;
  e.cluster = d->cluster;
  e.action = create ? store::OutboxAction::kCreate : store::OutboxAction::kUpdate;
  e.version = version;
  e.payload_hash = d->payload_hash;
  e.event = *std::move(encoded);
  if (d->carries_operation || d->carries_refresh) {
    pc.strip = PropagatedRequestOf(*app);
  }
  if (create) {
    Tracked fresh;
    fresh.resource_id = row.resource_id;
    fresh.cluster = row.cluster;
    fresh.hub_namespace = row.hub_namespace;
    fresh.hub_name = row.hub_name;
    fresh.hub_uid = row.hub_uid;
    fresh.work_name = row.work_name;
    fresh.appset_namespace = row.appset_namespace;
    fresh.appset_name = row.appset_name;
    fresh.busy = true;
    by_key_[key] = row.resource_id;
    {
      absl::MutexLock lock(&deleting_mu_);
      recently_deleted_.erase(row.resource_id);  // dispatched afresh
    }
    resources_[row.resource_id] = std::move(fresh);
    pc.created_entry = true;
    metrics_.tracked().Set(static_cast<double>(resources_.size()));
  } else {
    t->busy = true;
  }
  metrics_.Decision(create ? "create" : "update");
  Log().Debug(create ? "create" : "update",
              {{"resource", key}, {"cluster", d->cluster}, {"version", version}});
  batch.push_back(std::move(pc));
}

void Reconciler::RequestDelete(Tracked& t, cloudevents::Timestamp deletion_time,
                               std::vector<PendingChange>& batch) {
  const ResourceIdentity identity{t.resource_id, t.cluster, t.work_name, t.hub_namespace,
                                  t.hub_name};
  auto event = MakeDeleteEvent(identity, settings_.payload.source_id, t.version, deletion_time,
                               cloudevents::NewUuidV4(), Now());
  absl::StatusOr<std::string> encoded =
      event.ok() ? cloudevents::EncodeStructuredJson(*event) : event.status();
  if (!encoded.ok()) {
    // Only identities we built ourselves go in here: a failure is a bug.
    Log().Error("cannot encode a delete request",
                {{"resource", t.Key()}, {"error", std::string(encoded.status().message())}});
    return;
  }
  {
    absl::MutexLock lock(&deleting_mu_);
    deleting_.insert(t.resource_id);
  }
  PendingChange pc;
  store::DispatchedResource& row = pc.change.resource;
  row.resource_id = t.resource_id;
  row.cluster = t.cluster;
  row.hub_namespace = t.hub_namespace;
  row.hub_name = t.hub_name;
  row.hub_uid = t.hub_uid;
  row.work_name = t.work_name;
  row.appset_namespace = t.appset_namespace;
  row.appset_name = t.appset_name;
  row.version = t.version;
  row.payload_hash = t.payload_hash;
  row.deletion_state = DeletionState::kDeleteRequested;
  store::OutboxEntry& e = pc.change.event;
  e.resource_id = t.resource_id;
  e.cluster = t.cluster;
  e.action = store::OutboxAction::kDelete;
  e.version = t.version;
  e.payload_hash = t.payload_hash;
  e.event = *std::move(encoded);
  t.busy = true;
  metrics_.Decision("delete");
  Log().Info("deletion requested", {{"resource", t.Key()}, {"cluster", t.cluster}});
  batch.push_back(std::move(pc));
}

std::chrono::milliseconds Reconciler::DeleteResendDelay(int resends) const {
  return settings_.delete_resend_after * (int64_t{1} << std::clamp(resends, 0, 4));
}

bool Reconciler::ResendDeleteIfDue(Tracked& t, std::vector<PendingChange>& batch) {
  if (t.busy || t.unpublished > 0 || !t.delete_published_at.has_value() ||
      clock_.MonotonicNow() - *t.delete_published_at < DeleteResendDelay(t.delete_resends)) {
    return false;
  }
  // delete_published_at and delete_resends move on when the resend is published (OnPublished): a
  // resend whose Record fails is due again at once on its retry (busy/unpublished keep it single).
  metrics_.Decision("delete_resent");
  Log().Info("no deletion confirmation yet; sending the delete request again",
             {{"resource", t.Key()}, {"cluster", t.cluster}, {"resend", t.delete_resends + 1}});
  RequestDelete(t, Now(), batch);
  return true;
}

// ---------------------------------------------------------------------------------------------
// Store round trips

void Reconciler::FlushBatch(std::vector<PendingChange> batch) {
  ++inflight_batches_;
  workers_.Post([this, batch = std::move(batch)]() mutable {
    std::vector<store::DispatchChange> changes;
    changes.reserve(batch.size());
    for (const auto& pc : batch) {
      changes.push_back(pc.change);
    }
    auto seqs = store_.Record(changes);
    loop_.Post([this, batch = std::move(batch), seqs = std::move(seqs)]() mutable {
      OnRecorded(std::move(batch), std::move(seqs));
    });
  });
}

void Reconciler::OnRecorded(std::vector<PendingChange> batch,
                            absl::StatusOr<std::vector<int64_t>> seqs) {
  --inflight_batches_;
  if (seqs.ok() && seqs->size() != batch.size()) {
    seqs = absl::InternalError("store returned a wrong number of outbox seqs");
  }
  if (!seqs.ok()) {
    const auto delay = retry_backoff_.Next();
    Log().Warn("could not record dispatch changes; retrying",
               {{"count", static_cast<int64_t>(batch.size())},
                {"error", std::string(seqs.status().message())},
                {"delay_ms", static_cast<int64_t>(delay.count())}});
    for (auto& pc : batch) {
      const std::string& id = pc.change.resource.resource_id;
      auto it = resources_.find(id);
      if (it == resources_.end()) {
        continue;
      }
      const std::string key = it->second.Key();
      if (pc.change.event.action == store::OutboxAction::kDelete &&
          it->second.state == DeletionState::kLive) {
        // The deletion was decided but not recorded: it is decided again on the retry, unless
        // the Application came back meanwhile; until then it is live.
        absl::MutexLock lock(&deleting_mu_);
        deleting_.erase(id);
      }
      if (pc.created_entry) {
        Untrack(id);
      } else {
        it->second.busy = false;
        it->second.requeue = false;
      }
      EnqueueAfter(key, delay);
    }
    ScheduleProcess();
    return;
  }
  retry_backoff_.Reset();
  std::vector<store::OutboxEntry> entries;
  entries.reserve(batch.size());
  std::vector<std::string> requeue;
  for (size_t i = 0; i < batch.size(); ++i) {
    PendingChange& pc = batch[i];
    auto it = resources_.find(pc.change.resource.resource_id);
    if (it != resources_.end()) {
      Tracked& t = it->second;
      t.busy = false;
      t.payload_hash = pc.change.resource.payload_hash;
      t.version = pc.change.resource.version;
      t.state = pc.change.resource.deletion_state;
      ++t.unpublished;
      if (pc.strip) {
        t.strip = std::move(pc.strip);
        t.strip_hash = t.payload_hash;
      }
      if (t.requeue) {
        t.requeue = false;
        requeue.push_back(t.Key());
      }
    }
    pc.change.event.seq = (*seqs)[i];
    entries.push_back(std::move(pc.change.event));
  }
  outbox_.Add(std::move(entries));
  for (const auto& key : requeue) {
    Enqueue(key);
  }
  ScheduleProcess();
}

void Reconciler::OnPublished(const store::OutboxEntry& entry) {
  auto it = resources_.find(entry.resource_id);
  if (it == resources_.end()) {
    return;
  }
  Tracked& t = it->second;
  if (t.unpublished > 0) {
    --t.unpublished;
  }
  if (entry.action == store::OutboxAction::kDelete && t.state == DeletionState::kDeleteRequested) {
    // Check again once the agent has had its time to confirm; each resend waits twice as long.
    if (t.delete_published_at.has_value()) {
      ++t.delete_resends;
    }
    t.delete_published_at = clock_.MonotonicNow();
    EnqueueAfter(t.Key(), DeleteResendDelay(t.delete_resends));
  }
  if (t.strip && t.strip_hash == entry.payload_hash &&
      entry.action != store::OutboxAction::kDelete) {
    PropagatedRequest request = *std::move(t.strip);
    t.strip.reset();
    SubmitStrip(t, std::move(request));
  }
}

// ---------------------------------------------------------------------------------------------
// Hub writes

void Reconciler::SubmitStrip(Tracked& t, PropagatedRequest request) {
  if (request.empty()) {
    return;
  }
  t.stripping = true;
  const std::string id = t.resource_id;
  const std::string ns = t.hub_namespace;
  const std::string name = t.hub_name;
  workers_.Post([this, id, ns, name, request = std::move(request)] {
    absl::Status status = StripRequest(hub_, ns, name, request);
    loop_.Post([this, id, ns, name, status] {
      if (auto it = resources_.find(id); it != resources_.end()) {
        it->second.stripping = false;
      }
      if (status.ok()) {
        metrics_.HubWrite("strip_operation", "ok");
        Log().Info("removed the propagated operation/refresh from the hub Application",
                   {{"resource", absl::StrCat(ns, "/", name)}});
        return;
      }
      if (absl::IsFailedPrecondition(status) || absl::IsNotFound(status)) {
        metrics_.HubWrite("strip_operation", "conflict");
        return;  // a newer request arrived (its own event follows) or the app is gone
      }
      metrics_.HubWrite("strip_operation", "error");
      const auto delay = retry_backoff_.Next();
      Log().Warn(
          "could not remove operation/refresh from the hub Application; retrying",
          {{"resource", absl::StrCat(ns, "/", name)}, {"error", std::string(status.message())}});
      EnqueueAfter(absl::StrCat(ns, "/", name), delay);
    });
  });
}

void Reconciler::FinishDeletion(Tracked& t) {
  t.busy = true;
  const std::string id = t.resource_id;
  const std::string ns = t.hub_namespace;
  const std::string name = t.hub_name;
  const kube::ObjectPtr app = apps_.Get(ns, name);
  const bool release =
      app != nullptr && DeletionTimestampOf(*app).has_value() && HasResourcesFinalizer(*app);
  workers_.Post([this, id, ns, name, release] {
    absl::Status status = release ? ReleaseFinalizer(hub_, ns, name) : absl::OkStatus();
    const bool released = release && status.ok();
    if (status.ok()) {
      status = store_.Forget(id);
    }
    loop_.Post([this, id, ns, name, release, released, status] {
      const std::string key = absl::StrCat(ns, "/", name);
      if (release) {
        metrics_.HubWrite("release_finalizer", released ? "ok" : "error");
      }
      if (!status.ok()) {
        const auto delay = retry_backoff_.Next();
        Log().Warn("could not finish a confirmed deletion; retrying",
                   {{"resource", key}, {"error", std::string(status.message())}});
        if (auto it = resources_.find(id); it != resources_.end()) {
          it->second.busy = false;
          it->second.requeue = false;
        }
        EnqueueAfter(key, delay);
        return;
      }
      if (released) {
        metrics_.Decision("finalizer_released");
      }
      Log().Info("deletion finished", {{"resource", key}, {"finalizer_released", released}});
      {
        // A resync answer built before the deletion may still be queued (up to ~2 min of
        // retries): it must not carry the spec of what is gone. Kept 10 min.
        absl::MutexLock lock(&deleting_mu_);
        const auto now = clock_.MonotonicNow();
        recently_deleted_[id] = now;
        if (recently_deleted_.size() > 1024) {
          absl::erase_if(recently_deleted_, [now](const auto& entry) {
            return now - entry.second > std::chrono::minutes(10);
          });
        }
      }
      Untrack(id);
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

void Reconciler::OnDeletionConfirmed(const std::string& resource_id) {
  loop_.Post([this, resource_id] {
    auto it = resources_.find(resource_id);
    if (it == resources_.end()) {
      if (!loaded_.load()) {
        early_confirmations_.insert(resource_id);  // applied by InstallState()
      }
      return;
    }
    Tracked& t = it->second;
    if (t.state == DeletionState::kLive) {
      // A confirmation for something we still consider live can only be stale; the store row
      // says otherwise only if the status sink saw a Deleted for a resource we re-created.
      Log().Warn("deletion confirmed for a live resource; ignoring", {{"resource", t.Key()}});
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
    FinishDeletion(t);
  });
}

// ---------------------------------------------------------------------------------------------
// Unknown clusters

void Reconciler::Park(const std::string& key, const std::string& cluster, const json& app) {
  auto [it, inserted] = parked_.try_emplace(key, Parked{cluster, std::nullopt});
  it->second.cluster = cluster;
  if (inserted) {
    metrics_.UnknownCluster();
    metrics_.parked().Set(static_cast<double>(parked_.size()));
    Log().Warn("Application targets an unknown ManagedCluster; parked until it appears",
               {{"resource", key}, {"cluster", cluster}});
  }
  metrics_.Decision("unknown_cluster");
  const auto now = clock_.MonotonicNow();
  if (!it->second.last_event ||
      now - *it->second.last_event >= settings_.unknown_cluster_event_interval) {
    it->second.last_event = now;
    KubeEventSpec spec;
    spec.reason = "UnknownManagedCluster";
    spec.message = absl::StrCat("ManagedCluster \"", cluster, "\" (annotation ", kClusterAnnotation,
                                ") does not exist on the hub; the Application is not dispatched "
                                "and will be retried when the cluster appears");
    spec.component = settings_.event_component;
    spec.instance = settings_.event_instance;
    const json event = MakeKubeEvent(
        app, spec, clock_.Now(),
        absl::StrCat(absl::Hex(static_cast<uint64_t>(clock_.Now().time_since_epoch().count())),
                     absl::Hex(++event_counter_)));
    const std::string ns = event["metadata"]["namespace"].get<std::string>();
    workers_.Post([this, ns, event] {
      auto created = hub_.Create({"", "v1", "events", ns}, event, kube::WriteOptions{});
      metrics_.HubWrite("event", created.ok() ? "ok" : "error");
      if (!created.ok()) {
        Log().Warn("could not write a Kubernetes Event",
                   {{"namespace", ns}, {"error", std::string(created.status().message())}});
      }
    });
  }
  if (!parked_retry_armed_) {
    parked_retry_armed_ = true;
    loop_.PostAfter(settings_.unknown_cluster_retry, [this] { RetryParked(); });
  }
}

void Reconciler::Unpark(const std::string& key) {
  if (parked_.erase(key) > 0) {
    metrics_.parked().Set(static_cast<double>(parked_.size()));
  }
}

void Reconciler::RetryParked() {
  parked_retry_armed_ = false;
  for (const auto& [key, p] : parked_) {
    Enqueue(key);
  }
}

void Reconciler::OnClusterAdded(const std::string& cluster) {
  loop_.Post([this, cluster] {
    for (const auto& [key, p] : parked_) {
      if (p.cluster == cluster) {
        Enqueue(key);
      }
    }
  });
}

std::optional<Reconciler::ResourceView> Reconciler::ResourceForTest(
    const std::string& resource_id) const {
  auto it = resources_.find(resource_id);
  if (it == resources_.end()) {
    return std::nullopt;
  }
  const Tracked& t = it->second;
  return ResourceView{t.Key(), t.cluster, t.payload_hash, t.version, t.state, t.unpublished};
}

}  // namespace mmi::dispatcher
