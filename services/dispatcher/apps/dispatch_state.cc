#include "services/dispatcher/apps/dispatch_state.h"

#include <utility>

namespace mmi::dispatcher {

std::string TrackedResource::Key() const {
  return identity.hub_namespace + "/" + identity.hub_name;
}

store::DispatchedResource TrackedResource::Row(store::DeletionState row_state) const {
  store::DispatchedResource row;
  row.resource_id = identity.resource_id;
  row.cluster = identity.cluster;
  row.hub_namespace = identity.hub_namespace;
  row.hub_name = identity.hub_name;
  row.hub_uid = hub_uid;
  row.work_name = identity.work_name;
  row.appset_namespace = appset_namespace;
  row.appset_name = appset_name;
  row.version = version;
  row.payload_hash = payload_hash;
  row.deletion_state = row_state;
  row.delivery = delivery;
  return row;
}

TrackedResource TrackedResource::FromRow(store::DispatchedResource row) {
  TrackedResource t;
  t.identity = ResourceIdentity{.resource_id = std::move(row.resource_id),
                                .cluster = std::move(row.cluster),
                                .work_name = std::move(row.work_name),
                                .hub_namespace = std::move(row.hub_namespace),
                                .hub_name = std::move(row.hub_name)};
  t.hub_uid = std::move(row.hub_uid);
  t.appset_namespace = std::move(row.appset_namespace);
  t.appset_name = std::move(row.appset_name);
  t.payload_hash = std::move(row.payload_hash);
  t.version = row.version;
  t.state = row.deletion_state;
  t.delivery = row.delivery;
  return t;
}

TrackedResource* DispatchState::Find(const std::string& resource_id) {
  auto it = resources_.find(resource_id);
  return it == resources_.end() ? nullptr : &it->second;
}

const TrackedResource* DispatchState::Find(const std::string& resource_id) const {
  auto it = resources_.find(resource_id);
  return it == resources_.end() ? nullptr : &it->second;
}

TrackedResource* DispatchState::FindByKey(const std::string& key) {
  auto it = by_key_.find(key);
  return it == by_key_.end() ? nullptr : it->second;
}

TrackedResource& DispatchState::TrackStored(store::DispatchedResource row) {
  TrackedResource& t = Track(TrackedResource::FromRow(std::move(row)));
  if (t.state != store::DeletionState::kLive) {
    MarkDeleting(t.id());
  }
  return t;
}

TrackedResource& DispatchState::Track(TrackedResource resource) {
  std::string key = resource.Key();
  auto [it, added] = resources_.try_emplace(resource.id());
  TrackedResource& tracked = it->second;
  if (!added) {
    // The same resource under another key (two Applications whose work names collide; the
    // decision refuses that today): the old key must not keep pointing at it.
    if (auto old = by_key_.find(tracked.Key());
        old != by_key_.end() && old->second == &tracked && old->first != key) {
      by_key_.erase(old);
    }
  }
  tracked = std::move(resource);
  by_key_[std::move(key)] = &tracked;
  tracked_gauge_.Set(static_cast<double>(resources_.size()));
  return tracked;
}

void DispatchState::Untrack(const std::string& resource_id) {
  UnmarkDeleting(resource_id);
  auto it = resources_.find(resource_id);
  if (it == resources_.end()) {
    return;
  }
  if (auto kit = by_key_.find(it->second.Key());
      kit != by_key_.end() && kit->second == &it->second) {
    by_key_.erase(kit);
  }
  resources_.erase(it);
  tracked_gauge_.Set(static_cast<double>(resources_.size()));
}

void DispatchState::MarkDeleting(const std::string& resource_id) {
  absl::MutexLock lock(&mu_);
  deleting_.insert(resource_id);
}

void DispatchState::UnmarkDeleting(const std::string& resource_id) {
  absl::MutexLock lock(&mu_);
  deleting_.erase(resource_id);
}

void DispatchState::RememberDeleted(const std::string& resource_id,
                                    std::chrono::steady_clock::time_point now) {
  absl::MutexLock lock(&mu_);
  recently_deleted_[resource_id] = now;
  if (recently_deleted_.size() > 1024) {
    absl::erase_if(recently_deleted_, [now](const auto& entry) {
      return now - entry.second > std::chrono::minutes(10);
    });
  }
}

void DispatchState::ForgetDeleted(const std::string& resource_id) {
  absl::MutexLock lock(&mu_);
  recently_deleted_.erase(resource_id);
}

bool DispatchState::IsDeleting(const std::string& resource_id) const {
  absl::MutexLock lock(&mu_);
  return deleting_.contains(resource_id) || recently_deleted_.contains(resource_id);
}

}  // namespace mmi::dispatcher
