#include "services/status-sink/intake/manifest_payloads.h"

#include <algorithm>
#include <map>
#include <utility>

#include "libs/cloudevents/manifest_bundle.h"
#include "services/status-sink/metrics/sink_log.h"

namespace mmi::status_sink {

absl::Status ManifestPayloads::Load(store::StatusStore& store,
                                    const std::vector<store::HubAppRef>& refs) {
  // The resources of each missing payload hash. One per hash is asked first; the store answers
  // with what the resource holds now, which is another hash when its bundle changed since `refs`
  // were read (a revision change under way). Then the others of that hash are asked, once.
  std::map<std::string, std::vector<std::string>> missing;
  for (const auto& ref : refs) {
    if (ref.manifest && !Holds(ref.manifest->payload_hash)) {
      missing[ref.manifest->payload_hash].push_back(ref.resource_id);
    }
  }
  for (int round = 0; round < 2 && !missing.empty(); ++round) {
    std::vector<std::string> ids;
    for (const auto& [hash, resources] : missing) {
      if (round == 0) {
        ids.push_back(resources.front());
      } else {
        ids.insert(ids.end(), resources.begin() + 1,
                   resources.begin() + static_cast<std::ptrdiff_t>(
                                           std::min(resources.size(), kMaxRetriesPerHash + 1)));
      }
    }
    if (ids.empty()) {
      break;
    }
    auto payloads = store.LookupPayloads(ids);
    if (!payloads.ok()) {
      return payloads.status();
    }
    for (const auto& payload : *payloads) {
      if (Holds(payload.payload_hash)) {
        continue;
      }
      auto bundle = cloudevents::DecodeManifestBundle(payload.payload);
      if (!bundle.ok()) {
        SinkLog().Warn("the dispatched payload of a resource in manifest delivery is not a bundle",
                       {{"resource", payload.resource_id}, {"error", bundle.status().ToString()}});
        continue;
      }
      Insert(payload.payload_hash, std::make_shared<const Manifests>(std::move(bundle->manifests)));
    }
    std::erase_if(missing, [this](const auto& entry) { return Holds(entry.first); });
  }
  return absl::OkStatus();
}

std::shared_ptr<const Manifests> ManifestPayloads::Find(const std::string& payload_hash) {
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(payload_hash);
  if (it == entries_.end()) {
    return nullptr;
  }
  it->second.used = ++uses_;
  return it->second.manifests;
}

std::size_t ManifestPayloads::size() const {
  absl::MutexLock lock(&mu_);
  return entries_.size();
}

bool ManifestPayloads::Holds(const std::string& payload_hash) const {
  absl::MutexLock lock(&mu_);
  return entries_.count(payload_hash) > 0;
}

void ManifestPayloads::Insert(const std::string& payload_hash,
                              std::shared_ptr<const Manifests> manifests) {
  absl::MutexLock lock(&mu_);
  entries_[payload_hash] = Entry{std::move(manifests), ++uses_};
  if (entries_.size() <= max_payloads_) {
    return;
  }
  // O(entries) per eviction: it only runs when more distinct renders are live than the bound.
  auto oldest =
      std::min_element(entries_.begin(), entries_.end(),
                       [](const auto& a, const auto& b) { return a.second.used < b.second.used; });
  entries_.erase(oldest);
}

}  // namespace mmi::status_sink
