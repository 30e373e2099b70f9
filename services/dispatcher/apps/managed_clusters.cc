#include "services/dispatcher/apps/managed_clusters.h"

#include <utility>

#include "absl/strings/ascii.h"

namespace mmi::dispatcher {

kube::ResourceRef ManagedClustersRef() {
  return {"cluster.open-cluster-management.io", "v1", "managedclusters", ""};
}

bool IsLocalCluster(const nlohmann::json& managed_cluster) {
  const auto& meta = managed_cluster.value("metadata", nlohmann::json::object());
  if (meta.value("name", "") == kLocalClusterName) {
    return true;
  }
  const auto& labels = meta.value("labels", nlohmann::json::object());
  auto it = labels.find(kLocalClusterLabel);
  return it != labels.end() && it->is_string() &&
         absl::AsciiStrToLower(it->get<std::string>()) == "true";
}

ManagedClusterTracker::ManagedClusterTracker(std::function<void(const std::string&)> on_added)
    : on_added_(std::move(on_added)) {}

void ManagedClusterTracker::SetOnAdded(std::function<void(const std::string&)> on_added) {
  on_added_ = std::move(on_added);
}

bool ManagedClusterTracker::Known(const std::string& cluster) const {
  absl::MutexLock lock(&mu_);
  return clusters_.contains(cluster);
}

bool ManagedClusterTracker::IsLocal(const std::string& cluster) const {
  if (cluster == kLocalClusterName) {
    return true;
  }
  absl::MutexLock lock(&mu_);
  auto it = clusters_.find(cluster);
  return it != clusters_.end() && it->second;
}

bool ManagedClusterTracker::synced() const {
  absl::MutexLock lock(&mu_);
  return synced_;
}

size_t ManagedClusterTracker::size() const {
  absl::MutexLock lock(&mu_);
  return clusters_.size();
}

void ManagedClusterTracker::Upsert(const nlohmann::json& object) {
  const std::string name =
      object.value("metadata", nlohmann::json::object()).value("name", std::string());
  if (name.empty()) {
    return;
  }
  bool added = false;
  {
    absl::MutexLock lock(&mu_);
    added = clusters_.insert_or_assign(name, IsLocalCluster(object)).second;
  }
  if (added && on_added_) {
    on_added_(name);
  }
}

void ManagedClusterTracker::OnAdd(const kube::ObjectPtr& object, bool /*in_initial_list*/) {
  Upsert(*object);
}

void ManagedClusterTracker::OnUpdate(const kube::ObjectPtr& /*old_object*/,
                                     const kube::ObjectPtr& new_object) {
  Upsert(*new_object);
}

void ManagedClusterTracker::OnDelete(const kube::ObjectPtr& last_state) {
  const std::string name =
      last_state->value("metadata", nlohmann::json::object()).value("name", std::string());
  absl::MutexLock lock(&mu_);
  clusters_.erase(name);
}

void ManagedClusterTracker::OnSynced() {
  absl::MutexLock lock(&mu_);
  synced_ = true;
}

}  // namespace mmi::dispatcher
