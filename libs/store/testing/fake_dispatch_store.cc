#include "libs/store/testing/fake_dispatch_store.h"

#include <algorithm>
#include <optional>
#include <set>
#include <tuple>

namespace mmi::store::testing {

int FakeDispatchStore::record_calls() const {
  absl::MutexLock lock(&mu_);
  return record_calls_;
}

int FakeDispatchStore::mark_published_calls() const {
  absl::MutexLock lock(&mu_);
  return mark_published_calls_;
}

void FakeDispatchStore::HoldWarmLoadForTest(bool hold) {
  absl::MutexLock lock(&mu_);
  if (hold && !hold_warm_load_) {
    load_snapshot_ = std::make_unique<LoadSnapshot>(LoadSnapshot{resources_, outbox_});
  }
  hold_warm_load_ = hold;
}

absl::Status FakeDispatchStore::ForEachResource(
    const std::function<void(const DispatchedResource&)>& fn) {
  std::optional<std::vector<DispatchedResource>> stale;
  {
    absl::MutexLock lock(&mu_);
    if (hold_warm_load_) {
      return absl::UnavailableError("warm load held for the test");
    }
    if (load_snapshot_ != nullptr) {
      // The held load's rows as they were when it began; its outbox reads follow suit.
      stale_outbox_ = std::move(load_snapshot_->outbox);
      stale.emplace();
      for (auto& [id, r] : load_snapshot_->resources) {
        stale->push_back(std::move(r));
        stale->back().payload.clear();
        stale->back().metadata.clear();
      }
      load_snapshot_.reset();
    }
  }
  if (stale.has_value()) {
    for (const auto& r : *stale) {
      fn(r);
    }
    return absl::OkStatus();
  }
  return VisitCopies<DispatchedResource>(
      [this](std::vector<DispatchedResource>& copy) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        for (const auto& [id, r] : resources_) {
          copy.push_back(r);
          copy.back().payload.clear();  // the contract: rows without payload and metadata
          copy.back().metadata.clear();
        }
      },
      fn);
}

absl::StatusOr<bool> FakeDispatchStore::HasResources() {
  absl::MutexLock lock(&mu_);
  if (!fault_.ok()) {
    return fault_;
  }
  return !resources_.empty();
}

absl::StatusOr<std::optional<DispatchedResource>> FakeDispatchStore::GetResource(
    const std::string& resource_id) {
  absl::MutexLock lock(&mu_);
  if (!fault_.ok()) {
    return fault_;
  }
  auto it = resources_.find(resource_id);
  if (it == resources_.end()) {
    return std::optional<DispatchedResource>();
  }
  return std::optional<DispatchedResource>(it->second);
}

absl::StatusOr<ApplicationRows> FakeDispatchStore::LoadApplications(
    const std::vector<HubKey>& keys, const std::vector<std::string>& resource_ids) {
  absl::MutexLock lock(&mu_);
  if (!fault_.ok()) {
    return fault_;
  }
  ApplicationRows out;
  std::set<std::string> ids;
  for (const auto& [id, r] : resources_) {  // ascending id
    const bool wanted =
        std::find(resource_ids.begin(), resource_ids.end(), id) != resource_ids.end() ||
        std::any_of(keys.begin(), keys.end(), [&r](const HubKey& k) {
          return r.hub_namespace == k.hub_namespace && r.hub_name == k.hub_name;
        });
    if (wanted) {
      out.resources.push_back(r);
      out.resources.back().payload.clear();  // as ForEachResource
      out.resources.back().metadata.clear();
      ids.insert(id);
    }
  }
  for (const auto& [seq, e] : outbox_) {
    if (ids.contains(e.resource_id)) {
      out.outbox.push_back(e);
    }
  }
  return out;
}

absl::StatusOr<std::vector<DispatchedResource>> FakeDispatchStore::ResourcesOfCluster(
    const std::string& cluster) {
  absl::MutexLock lock(&mu_);
  if (!fault_.ok()) {
    return fault_;
  }
  std::vector<DispatchedResource> out;
  for (const auto& [id, r] : resources_) {
    if (r.cluster == cluster) {
      out.push_back(r);
    }
  }
  return out;
}

absl::StatusOr<std::vector<int64_t>> FakeDispatchStore::Record(
    const std::vector<DispatchChange>& changes) {
  absl::MutexLock lock(&mu_);
  ++record_calls_;
  if (!fault_.ok()) {
    return fault_;
  }
  std::vector<int64_t> seqs;
  for (const auto& c : changes) {
    DispatchedResource r = c.resource;
    auto existing = resources_.find(r.resource_id);
    if (existing != resources_.end()) {
      r.last_published_at = existing->second.last_published_at;
      // A delete request recorded again after the confirmation: the confirmation stands.
      if (r.deletion_state == DeletionState::kDeleteRequested &&
          existing->second.deletion_state == DeletionState::kDeleteConfirmed) {
        r.deletion_state = DeletionState::kDeleteConfirmed;
      }
    }
    if (c.manifest_render) {
      renders_[c.manifest_render->resource_id] = *c.manifest_render;
      render_notifications_.push_back(c.manifest_render->resource_id);
    } else if (c.event.action != OutboxAction::kDelete && renders_.erase(r.resource_id) > 0) {
      render_notifications_.push_back(r.resource_id);  // back to Application delivery
    }
    resources_[r.resource_id] = std::move(r);
    OutboxEntry e = c.event;
    e.seq = next_seq_++;
    e.attempts = 0;
    seqs.push_back(e.seq);
    outbox_[e.seq] = std::move(e);
  }
  return seqs;
}

absl::StatusOr<std::vector<OutboxEntry>> FakeDispatchStore::PendingOutbox(int64_t after_seq,
                                                                          int limit) {
  absl::MutexLock lock(&mu_);
  if (!fault_.ok()) {
    return fault_;
  }
  const std::map<int64_t, OutboxEntry>& from = stale_outbox_ ? *stale_outbox_ : outbox_;
  std::vector<OutboxEntry> out;
  for (auto it = from.upper_bound(after_seq);
       it != from.end() && static_cast<int>(out.size()) < limit; ++it) {
    out.push_back(it->second);
  }
  if (static_cast<int>(out.size()) < limit) {
    stale_outbox_.reset();  // the held load's last page
  }
  return out;
}

absl::Status FakeDispatchStore::MarkPublished(const std::vector<int64_t>& seqs,
                                              std::chrono::system_clock::time_point at) {
  absl::MutexLock lock(&mu_);
  ++mark_published_calls_;
  if (!fault_.ok()) {
    return fault_;
  }
  for (int64_t seq : seqs) {
    auto it = outbox_.find(seq);
    if (it == outbox_.end()) {
      continue;
    }
    auto r = resources_.find(it->second.resource_id);
    if (r != resources_.end()) {
      r->second.last_published_at = std::chrono::time_point_cast<std::chrono::microseconds>(at);
    }
    outbox_.erase(it);
  }
  return absl::OkStatus();
}

absl::Status FakeDispatchStore::RecordPublishFailure(int64_t seq, const std::string& /*error*/) {
  absl::MutexLock lock(&mu_);
  if (!fault_.ok()) {
    return fault_;
  }
  auto it = outbox_.find(seq);
  if (it != outbox_.end()) {
    ++it->second.attempts;
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> FakeDispatchStore::MarkDeletionConfirmed(const std::string& resource_id) {
  absl::MutexLock lock(&mu_);
  if (!fault_.ok()) {
    return fault_;
  }
  return ConfirmDeletionLocked(resources_, resource_id);
}

absl::StatusOr<std::vector<std::string>> FakeDispatchStore::ConfirmedDeletions() {
  absl::MutexLock lock(&mu_);
  if (!fault_.ok()) {
    return fault_;
  }
  std::vector<std::string> out;
  for (const auto& [id, r] : resources_) {  // std::map: ascending ids
    if (r.deletion_state == DeletionState::kDeleteConfirmed) {
      out.push_back(id);
    }
  }
  return out;
}

absl::Status FakeDispatchStore::Forget(const std::string& resource_id) {
  absl::MutexLock lock(&mu_);
  if (!fault_.ok()) {
    return fault_;
  }
  resources_.erase(resource_id);
  renders_.erase(resource_id);
  for (auto it = outbox_.begin(); it != outbox_.end();) {
    it = it->second.resource_id == resource_id ? outbox_.erase(it) : std::next(it);
  }
  if (auto ack = acks_.find(resource_id); ack != acks_.end()) {
    ack->second.version.reset();
  }
  return absl::OkStatus();
}

absl::Status FakeDispatchStore::PutManifestRender(const ManifestRender& render) {
  absl::MutexLock lock(&mu_);
  if (!fault_.ok()) {
    return fault_;
  }
  if (render.resource_id.empty()) {
    return absl::InvalidArgumentError("manifest render: resource_id is empty");
  }
  renders_[render.resource_id] = render;
  render_notifications_.push_back(render.resource_id);
  return absl::OkStatus();
}

absl::StatusOr<std::optional<ManifestRender>> FakeDispatchStore::GetManifestRender(
    const std::string& resource_id) {
  absl::MutexLock lock(&mu_);
  if (!fault_.ok()) {
    return fault_;
  }
  auto it = renders_.find(resource_id);
  if (it == renders_.end()) {
    return std::optional<ManifestRender>();
  }
  return std::optional<ManifestRender>(it->second);
}

std::vector<std::string> FakeDispatchStore::manifest_render_notifications() const {
  absl::MutexLock lock(&mu_);
  return render_notifications_;
}

void FakeDispatchStore::SetAckForTest(const std::string& resource_id,
                                      std::optional<int32_t> acked_version,
                                      std::chrono::system_clock::time_point reported_at) {
  absl::MutexLock lock(&mu_);
  acks_[resource_id] = Ack{.version = acked_version, .reported_at = reported_at};
}

absl::StatusOr<AckSnapshot> FakeDispatchStore::UnacknowledgedResources(const AckWindow& window) {
  using Time = std::chrono::system_clock::time_point;
  absl::MutexLock lock(&mu_);
  if (!fault_.ok()) {
    return fault_;
  }
  struct ClusterFacts {
    std::optional<Time> acked_publish;
    std::optional<Time> reported;
  };
  AckSnapshot out;
  std::map<std::string, ClusterFacts> clusters;
  for (const auto& [id, r] : resources_) {
    const auto ack = acks_.find(id);
    if (r.deletion_state != DeletionState::kLive || ack == acks_.end()) {
      continue;
    }
    ClusterFacts& c = clusters[r.cluster];
    c.reported = std::max(c.reported.value_or(Time::min()), ack->second.reported_at);
    if (ack->second.version.has_value() && *ack->second.version >= r.version &&
        r.last_published_at.has_value()) {
      c.acked_publish = std::max(c.acked_publish.value_or(Time::min()), *r.last_published_at);
      out.acked_frontier = std::max(out.acked_frontier.value_or(Time::min()), *r.last_published_at);
      ++out.acknowledged;
    }
  }
  std::set<std::string> pending;
  for (const auto& [seq, e] : outbox_) {
    pending.insert(e.resource_id);
  }
  std::vector<UnacknowledgedResource> found;
  for (const auto& [id, r] : resources_) {
    const auto c = clusters.find(r.cluster);
    if (r.deletion_state != DeletionState::kLive || !r.last_published_at.has_value() ||
        c == clusters.end() || pending.contains(id) || renders_.contains(id)) {
      continue;
    }
    const auto ack = acks_.find(id);
    const std::optional<int32_t> acked = ack == acks_.end() ? std::nullopt : ack->second.version;
    if (acked.has_value() && *acked >= r.version) {
      continue;
    }
    const Time t = *r.last_published_at;
    const bool later_acked =
        c->second.acked_publish.has_value() && *c->second.acked_publish >= t + window.grace;
    const bool reported =
        c->second.reported.has_value() && *c->second.reported >= t + window.timeout;
    if (later_acked || reported) {
      found.push_back(UnacknowledgedResource{.resource_id = id,
                                             .version = r.version,
                                             .acked_version = acked,
                                             .published_at = t,
                                             .overtaken = later_acked});
    }
  }
  // The overtaken first, then the longest published.
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
    if (a.overtaken != b.overtaken) {
      return a.overtaken;
    }
    return std::tie(a.published_at, a.resource_id) < std::tie(b.published_at, b.resource_id);
  });
  if (static_cast<int>(found.size()) > window.limit) {
    found.resize(static_cast<size_t>(window.limit));
  }
  out.resources = std::move(found);
  return out;
}

absl::StatusOr<std::vector<AcknowledgedHandover>> FakeDispatchStore::AcknowledgedHandovers(
    int limit) {
  absl::MutexLock lock(&mu_);
  if (!fault_.ok()) {
    return fault_;
  }
  std::vector<AcknowledgedHandover> out;
  for (const auto& [id, r] : resources_) {  // ascending id
    if (static_cast<int>(out.size()) == limit) {
      break;
    }
    const auto ack = acks_.find(id);
    if (r.deletion_state != DeletionState::kLive || ack == acks_.end() ||
        !ack->second.version.has_value() || *ack->second.version < r.version ||
        (r.delivery != Delivery::kReleasingApplication &&
         r.delivery != Delivery::kOrphaningManifests)) {
      continue;
    }
    out.push_back({.resource_id = id, .version = r.version, .delivery = r.delivery});
  }
  return out;
}

}  // namespace mmi::store::testing
