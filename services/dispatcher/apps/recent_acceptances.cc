#include "services/dispatcher/apps/recent_acceptances.h"

#include <utility>

#include "absl/container/flat_hash_set.h"

namespace mmi::dispatcher {

void RecentAcceptances::Note(std::string cluster, std::string resource_id,
                             std::chrono::steady_clock::time_point accepted_at) {
  if (capacity_ == 0) {
    return;
  }
  accepted_.push_back(Accepted{accepted_at, std::move(cluster), std::move(resource_id)});
  while (accepted_.size() > capacity_ || accepted_.front().at + window_ < accepted_at) {
    accepted_.pop_front();
  }
}

std::map<std::string, std::vector<std::string>> RecentAcceptances::Take() {
  std::map<std::string, std::vector<std::string>> by_cluster;
  absl::flat_hash_set<std::string> seen;
  for (Accepted& a : accepted_) {
    if (seen.insert(a.resource_id).second) {
      by_cluster[a.cluster].push_back(std::move(a.resource_id));
    }
  }
  accepted_.clear();
  return by_cluster;
}

}  // namespace mmi::dispatcher
