#include "services/status-sink/intake/hub_apps.h"

#include <utility>

#include "services/status-sink/metrics/sink_log.h"

namespace mmi::status_sink {
HubApps::HubApps(HubAppsSettings settings, store::StatusStore& store, Executor& store_executor,
                 Executor& loop, const Clock& clock, SinkMetrics& metrics, Found found,
                 ManifestStatuses* manifests, Refreshed refreshed)
    : settings_(std::move(settings)),
      store_(store),
      store_executor_(store_executor),
      loop_(loop),
      clock_(clock),
      metrics_(metrics),
      found_(std::move(found)),
      manifests_(manifests),
      refreshed_(std::move(refreshed)),
      unknown_resource_(
          SinkLog(), "status events for resources the dispatcher does not know; dropped", clock) {}

const store::HubAppRef* HubApps::Find(const std::string& resource_id) const {
  auto ref = refs_.find(resource_id);
  return ref == refs_.end() ? nullptr : &ref->second;
}

void HubApps::Forget(const std::string& resource_id) {
  refs_.erase(resource_id);
  if (manifests_ != nullptr) {
    manifests_->Forget(resource_id);
  }
}

void HubApps::Refresh(const std::string& resource_id) {
  // The cached record stays until the lookup replaces it: a write waiting in the coalescer needs
  // it, and a report built on it meanwhile is asked for again by refreshed_.
  awaiting_[resource_id];  // no report waits for it: the lookup calls refreshed_ instead
  refresh_.insert(resource_id);
  StartLookup();
}

void HubApps::Await(AwaitingReport item) {
  const std::string key = item.report.update.resource_id;
  awaiting_[key].push_back(std::move(item));
  ++awaiting_count_;
  StartLookup();
}

void HubApps::StartLookup() {
  if (in_flight_ || awaiting_.empty() || clock_.MonotonicNow() < retry_at_) {
    return;
  }
  std::vector<std::string> ids;
  for (const auto& [id, items] : awaiting_) {
    if (ids.size() >= settings_.lookup_batch) {
      break;
    }
    ids.push_back(id);
  }
  in_flight_ = true;
  ManifestPayloads* payloads = manifests_ != nullptr ? &manifests_->payloads() : nullptr;
  store_executor_.Post([this, payloads, ids = std::move(ids)]() mutable {
    auto refs = store_.LookupHubApps(ids);
    if (refs.ok() && payloads != nullptr) {
      if (absl::Status loaded = payloads->Load(store_, *refs); !loaded.ok()) {
        refs = loaded;  // retried as a failed lookup
      }
    }
    loop_.Post([this, ids = std::move(ids), refs = std::move(refs)]() mutable {
      OnLookupDone(std::move(ids), std::move(refs));
    });
  });
}

void HubApps::OnLookupDone(std::vector<std::string> ids,
                           absl::StatusOr<std::vector<store::HubAppRef>> refs) {
  in_flight_ = false;
  if (!refs.ok()) {
    metrics_.StoreError("lookup");
    retry_at_ = clock_.MonotonicNow() + BackoffDelay(settings_.retry_backoff, failures_++);
    SinkLog().Warn(
        "cannot look up hub applications; retrying",
        {{"error", refs.status().ToString()}, {"ids", static_cast<int64_t>(ids.size())}});
    return;
  }
  failures_ = 0;
  for (auto& ref : *refs) {
    std::string id = ref.resource_id;
    refs_.insert_or_assign(std::move(id), std::move(ref));
  }
  for (const auto& id : ids) {
    auto node = awaiting_.extract(id);
    if (node.empty()) {
      continue;
    }
    awaiting_count_ -= node.mapped().size();
    auto ref = refs_.find(id);
    if (refresh_.erase(id) > 0 && ref != refs_.end() && refreshed_) {
      refreshed_(ref->second);
    }
    for (auto& item : node.mapped()) {
      if (ref == refs_.end()) {
        metrics_.Dropped(DropReason::kUnknownResource);
        unknown_resource_.Add(item.report.event_id, {{"resource", id},
                                                     {"cluster", item.report.cluster},
                                                     {"event_id", item.report.event_id}});
        std::move(item.ack)();
        continue;
      }
      found_(ref->second, std::move(item));
    }
  }
  StartLookup();
}

}  // namespace mmi::status_sink
