#include "libs/store/testing/fake_status_store.h"

#include <algorithm>
#include <tuple>
#include <utility>

namespace mmi::store::testing {

absl::StatusOr<std::vector<HubAppRef>> FakeStatusStore::LookupHubApps(
    const std::vector<std::string>& resource_ids) {
  absl::MutexLock lock(&mu_);
  ++lookup_calls_;
  if (!fault_.ok()) {
    return fault_;
  }
  std::vector<HubAppRef> out;
  for (const auto& id : resource_ids) {
    auto it = resources_.find(id);
    if (it != resources_.end() && std::none_of(out.begin(), out.end(), [&](const HubAppRef& r) {
          return r.resource_id == id;
        })) {
      out.push_back(it->second);
    }
  }
  return out;
}

absl::StatusOr<std::vector<DispatchedPayload>> FakeStatusStore::LookupPayloads(
    const std::vector<std::string>& resource_ids) {
  absl::MutexLock lock(&mu_);
  if (!fault_.ok()) {
    return fault_;
  }
  std::map<std::string, DispatchedPayload> found;
  for (const auto& id : resource_ids) {
    auto payload = payloads_.find(id);
    auto ref = resources_.find(id);
    if (payload != payloads_.end() && ref != resources_.end()) {
      found[id] = {id, ref->second.manifest ? ref->second.manifest->payload_hash : "",
                   payload->second};
    }
  }
  std::vector<DispatchedPayload> out;
  for (auto& [id, p] : found) {
    out.push_back(std::move(p));
  }
  return out;
}

absl::Status FakeStatusStore::ForEachStaleManifestRender(
    const std::function<void(const std::string& resource_id, const std::string& cluster)>& fn) {
  std::vector<std::pair<std::string, std::string>> stale;
  {
    absl::MutexLock lock(&mu_);
    if (!fault_.ok()) {
      return fault_;
    }
    for (const auto& [id, rendered] : rendered_at_) {
      auto applied = applied_at_.find(id);
      auto ref = resources_.find(id);
      if (ref != resources_.end() && (applied == applied_at_.end() || rendered > applied->second)) {
        stale.emplace_back(id, ref->second.cluster);
      }
    }
  }
  for (const auto& [id, cluster] : stale) {
    fn(id, cluster);
  }
  return absl::OkStatus();
}

absl::Status FakeStatusStore::ForEachAppliedStatus(
    const std::function<void(const AppliedStatus&)>& fn) {
  return VisitCopies<AppliedStatus>(
      [this](std::vector<AppliedStatus>& copy) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        for (const auto& [id, s] : applied_) {
          copy.push_back(s);
        }
      },
      fn);
}

absl::Status FakeStatusStore::SaveAppliedStatuses(const std::vector<AppliedStatus>& statuses) {
  absl::MutexLock lock(&mu_);
  ++save_calls_;
  if (!fault_.ok()) {
    return fault_;
  }
  for (const auto& s : statuses) {
    AppliedStatus stored = s;
    // timestamptz keeps microseconds.
    if (stored.volatile_written_at) {
      stored.volatile_written_at =
          std::chrono::time_point_cast<std::chrono::microseconds>(*stored.volatile_written_at);
    }
    if (auto old = applied_.find(s.resource_id); old != applied_.end()) {
      stored = KeepingStatusOf(old->second, stored);
    }
    stored.acknowledgement_only = false;  // not stored
    applied_[s.resource_id] = std::move(stored);
    applied_at_[s.resource_id] = ++writes_;
  }
  return absl::OkStatus();
}

absl::Status FakeStatusStore::ForEachResyncEntry(
    const std::function<void(const ResyncEntry&)>& fn) {
  return VisitCopies<ResyncEntry>(
      [this](std::vector<ResyncEntry>& copy) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        for (const auto& [id, r] : resources_) {
          auto it = applied_.find(id);
          copy.push_back({id, r.cluster, it == applied_.end() ? "" : it->second.status_hash});
        }
      },
      fn);
}

absl::StatusOr<bool> FakeStatusStore::MarkDeletionConfirmed(const std::string& resource_id) {
  absl::MutexLock lock(&mu_);
  if (!fault_.ok()) {
    return fault_;
  }
  if (!ConfirmDeletionLocked(resources_, resource_id)) {
    return false;
  }
  applied_.erase(resource_id);
  applied_at_.erase(resource_id);
  return true;
}

absl::StatusOr<std::vector<AppSetCount>> FakeStatusStore::AppSetCounts() {
  absl::MutexLock lock(&mu_);
  if (!fault_.ok()) {
    return fault_;
  }
  std::map<std::tuple<std::string, std::string, std::string, std::string>, int64_t> counts;
  for (const auto& [id, s] : applied_) {
    if (!s.appset_name) {
      continue;
    }
    ++counts[{s.appset_namespace.value_or(""), *s.appset_name, s.sync_status.value_or(""),
              s.health_status.value_or("")}];
  }
  std::vector<AppSetCount> out;
  for (const auto& [key, n] : counts) {
    out.push_back({std::get<0>(key), std::get<1>(key), std::get<2>(key), std::get<3>(key), n});
  }
  return out;
}

void FakeStatusStore::AddResourceForTest(const HubAppRef& ref) {
  absl::MutexLock lock(&mu_);
  resources_[ref.resource_id] = ref;
}

void FakeStatusStore::AddResourceForTest(const HubAppRef& ref, const std::string& payload) {
  absl::MutexLock lock(&mu_);
  resources_[ref.resource_id] = ref;
  payloads_[ref.resource_id] = payload;
  if (ref.manifest) {
    rendered_at_[ref.resource_id] = ++writes_;
  } else {
    rendered_at_.erase(ref.resource_id);
  }
}

std::optional<AppliedStatus> FakeStatusStore::AppliedForTest(const std::string& resource_id) const {
  absl::MutexLock lock(&mu_);
  auto it = applied_.find(resource_id);
  if (it == applied_.end()) {
    return std::nullopt;
  }
  return it->second;
}

std::optional<DeletionState> FakeStatusStore::DeletionStateForTest(
    const std::string& resource_id) const {
  absl::MutexLock lock(&mu_);
  auto it = resources_.find(resource_id);
  if (it == resources_.end()) {
    return std::nullopt;
  }
  return it->second.deletion_state;
}

int FakeStatusStore::save_calls() const {
  absl::MutexLock lock(&mu_);
  return save_calls_;
}

int FakeStatusStore::lookup_calls() const {
  absl::MutexLock lock(&mu_);
  return lookup_calls_;
}

}  // namespace mmi::store::testing
