#include "services/dispatcher/apps/state_loader.h"

#include <iterator>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "libs/cloudevents/resource_id.h"
#include "libs/kube_object/object.h"
#include "services/dispatcher/apps/decision.h"
#include "services/dispatcher/apps/internal/reconciler_log.h"

namespace mmi::dispatcher {
namespace {

using store::DeletionState;

}  // namespace

StateLoader::StateLoader(Deps deps, const ReconcilerSettings& settings)
    : deps_(std::move(deps)),
      settings_(settings),
      load_backoff_(settings.retry),
      early_backoff_(settings.retry) {}

void StateLoader::Start() {
  if (started_.exchange(true)) {
    return;
  }
  deps_.workers.Post([this] { Load(); });
}

// ---------------------------------------------------------------------------------------------
// The warm load

absl::Status StateLoader::ReadOutbox(std::vector<store::OutboxEntry>& outbox) {
  int64_t after = 0;
  while (true) {
    auto page = deps_.store.PendingOutbox(after, settings_.outbox_recover_page);
    if (!page.ok()) {
      return page.status();
    }
    if (page->empty()) {
      return absl::OkStatus();
    }
    after = page->back().seq;
    const bool last = static_cast<int>(page->size()) < settings_.outbox_recover_page;
    outbox.insert(outbox.end(), std::make_move_iterator(page->begin()),
                  std::make_move_iterator(page->end()));
    if (last) {
      return absl::OkStatus();
    }
  }
}

void StateLoader::Load() {
  Loaded loaded;
  absl::Status status = deps_.store.ForEachResource(
      [&](const store::DispatchedResource& r) { loaded.resources.push_back(r); });
  if (status.ok()) {
    status = ReadOutbox(loaded.outbox);
  }
  if (!status.ok()) {
    deps_.loop.Post([this, status] {
      const auto delay = load_backoff_.Next();
      internal::ReconcilerLog().Warn("could not load the dispatch state; retrying",
                                     {{"error", std::string(status.message())},
                                      {"delay_ms", static_cast<int64_t>(delay.count())}});
      deps_.loop.PostAfter(delay, [this] { deps_.workers.Post([this] { Load(); }); });
    });
    return;
  }
  deps_.loop.Post([this, loaded = std::move(loaded)]() mutable { Install(std::move(loaded)); });
}

void StateLoader::TrackLoaded(Loaded& loaded, const absl::flat_hash_set<std::string>& early) {
  for (auto& r : loaded.resources) {
    if (early.contains(r.resource_id)) {
      continue;
    }
    deps_.state.TrackStored(std::move(r));
  }
  std::erase_if(loaded.outbox,
                [&](const store::OutboxEntry& e) { return early.contains(e.resource_id); });
  for (const auto& e : loaded.outbox) {
    if (TrackedResource* t = deps_.state.Find(e.resource_id); t != nullptr) {
      ++t->unpublished;
    }
  }
  for (const auto& id : early_confirmations_) {
    if (TrackedResource* t = deps_.state.Find(id);
        t != nullptr && t->state == DeletionState::kDeleteRequested) {
      t->state = DeletionState::kDeleteConfirmed;  // finished by the sweep
    }
  }
  early_confirmations_.clear();
}

void StateLoader::StartResendClocks(const absl::flat_hash_set<std::string>& early) {
  // (a pending one starts when it is published)
  const auto now = deps_.clock.MonotonicNow();
  for (auto& [id, t] : deps_.state.resources()) {
    // (one decided while the load ran has its clock already, set when it was published)
    if (t.state == DeletionState::kDeleteRequested && t.unpublished == 0 && !early.contains(id)) {
      t.delete_published_at = now;
      deps_.enqueue_after(t.Key(), DeleteResendDelay(settings_, 0));
    }
  }
}

void StateLoader::Install(Loaded loaded) {
  // What is tracked already was decided while the load ran (EnqueueEarly): newer than what the
  // load read, with its outbox events added (the older ones) or on their way (the new ones).
  absl::flat_hash_set<std::string> early;
  early.reserve(deps_.state.size());
  for (const auto& [id, t] : deps_.state.resources()) {
    early.insert(id);
  }
  const size_t outbox_read = loaded.outbox.size();
  TrackLoaded(loaded, early);
  early_wanted_.clear();
  early_fetched_.clear();
  early_ready_.clear();
  StartResendClocks(early);
  internal::ReconcilerLog().Info("dispatch state loaded",
                                 {{"resources", static_cast<int64_t>(deps_.state.size())},
                                  {"outbox", static_cast<int64_t>(outbox_read)},
                                  {"tracked_while_loading", static_cast<int64_t>(early.size())}});
  loaded_.store(true);
  // Events recorded but not accepted before the restart go out first, with their original ids.
  deps_.outbox.Add(std::move(loaded.outbox));
  deps_.installed();
}

// ---------------------------------------------------------------------------------------------
// Keys decided while the state loads

void StateLoader::EnqueueEarly(const std::string& key) {
  if (Stopped()) {
    return;  // the key is queued: the loaded state decides it
  }
  if (early_fetched_.contains(key)) {
    early_ready_.insert(key);
    DecideEarly();
    return;
  }
  early_wanted_.insert(key);
  EarlyFetch();
}

void StateLoader::EarlyFetch() {
  if (early_fetching_ || early_wanted_.empty() || Stopped()) {
    return;
  }
  early_fetching_ = true;
  std::vector<std::string> keys;
  std::vector<store::HubKey> hub_keys;
  // The id each cached Application would be dispatched as: another key may hold it (two keys
  // can name one work), and Decide() must see that row to refuse the second one.
  std::vector<std::string> ids;
  for (auto it = early_wanted_.begin();
       it != early_wanted_.end() && keys.size() < settings_.batch_size;) {
    auto [ns, name] = kube::SplitObjectKey(*it);
    if (const kube::ObjectPtr app = deps_.apps.Get(ns, name); app != nullptr) {
      if (std::optional<std::string> cluster = PullModelCluster(*app); cluster.has_value()) {
        ids.push_back(cloudevents::WorkResourceId(settings_.payload.source_id, *cluster,
                                                  absl::StrCat(ns, "-", name)));
      }
    }
    hub_keys.push_back({std::move(ns), std::move(name)});
    keys.push_back(*it);
    early_wanted_.erase(it++);
  }
  deps_.workers.Post([this, keys = std::move(keys), hub_keys = std::move(hub_keys),
                      ids = std::move(ids)]() mutable {
    auto rows = deps_.store.LoadApplications(hub_keys, ids);
    deps_.loop.Post([this, keys = std::move(keys), rows = std::move(rows)]() mutable {
      OnEarlyFetched(std::move(keys), std::move(rows));
    });
  });
}

void StateLoader::OnEarlyFetched(std::vector<std::string> keys,
                                 absl::StatusOr<store::ApplicationRows> rows) {
  early_fetching_ = false;
  if (Stopped()) {
    return;  // the installed state is the newer one and the keys are queued; or we stop
  }
  if (!rows.ok()) {
    // They wait for the warm load if it ends first (they are queued too).
    const auto delay = early_backoff_.Next();
    internal::ReconcilerLog().Warn("could not read the rows of changed Applications; retrying",
                                   {{"count", static_cast<int64_t>(keys.size())},
                                    {"error", std::string(rows.status().message())},
                                    {"delay_ms", static_cast<int64_t>(delay.count())}});
    early_wanted_.insert(keys.begin(), keys.end());
    deps_.loop.PostAfter(delay, [this] { EarlyFetch(); });
    return;
  }
  early_backoff_.Reset();
  absl::flat_hash_set<std::string> tracked_now;
  for (auto& r : rows->resources) {
    if (deps_.state.Find(r.resource_id) != nullptr) {
      continue;  // decided here already (two keys naming one work): ours is newer
    }
    TrackedResource& t = deps_.state.TrackStored(std::move(r));
    if (t.state == DeletionState::kDeleteRequested && early_confirmations_.erase(t.id()) > 0) {
      t.state = DeletionState::kDeleteConfirmed;  // finished by the sweep
    }
    tracked_now.insert(t.id());
  }
  // Events recorded before the restart and not accepted go out before anything decided now
  // (the outbox keeps each resource's events in seq order).
  std::vector<store::OutboxEntry> pending;
  for (auto& e : rows->outbox) {
    if (tracked_now.contains(e.resource_id)) {
      ++deps_.state.Find(e.resource_id)->unpublished;
      pending.push_back(std::move(e));
    }
  }
  if (!pending.empty()) {
    deps_.outbox.Add(std::move(pending));
  }
  for (auto& key : keys) {
    early_fetched_.insert(key);
    early_ready_.insert(std::move(key));
  }
  DecideEarly();
  EarlyFetch();
}

void StateLoader::DecideEarly() {
  if (Stopped() || early_ready_.empty()) {
    return;
  }
  if (deps_.recorder.inflight() >= settings_.max_inflight_batches || deps_.gate.Full()) {
    return;  // ChangeRecorder or OutboxGate calls again
  }
  if (!deps_.clusters_synced()) {
    // An unknown cluster may only be unlisted yet.
    if (!early_wait_posted_) {
      early_wait_posted_ = true;
      deps_.loop.PostAfter(std::chrono::milliseconds(200), [this] {
        early_wait_posted_ = false;
        DecideEarly();
      });
    }
    return;
  }
  std::vector<PendingChange> batch;
  size_t decided = 0;
  for (size_t n = 0; n < settings_.batch_size && !early_ready_.empty(); ++n) {
    const std::string key = *early_ready_.begin();
    early_ready_.erase(early_ready_.begin());
    // An absent Application waits for the complete list (it is queued).
    if (deps_.reconcile(key, batch)) {
      ++decided;
    }
  }
  deps_.metrics.decided_before_load().Increment(static_cast<double>(decided));
  if (!batch.empty()) {
    deps_.recorder.Flush(std::move(batch));  // its slot_freed takes the rest
  } else if (!early_ready_.empty()) {
    deps_.loop.Post([this] { DecideEarly(); });
  }
}

}  // namespace mmi::dispatcher
