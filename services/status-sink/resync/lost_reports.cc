#include "services/status-sink/resync/lost_reports.h"

#include <algorithm>

namespace mmi::status_sink {

std::vector<ResyncChunk> ChunkResyncLists(const ResyncLists& per_cluster, std::size_t chunk_size) {
  std::vector<ResyncChunk> chunks;
  for (const auto& [cluster, list] : per_cluster) {
    const auto& all = list.status_hashes;
    for (std::size_t start = 0; start < all.size(); start += chunk_size) {
      const std::size_t end = std::min(all.size(), start + chunk_size);
      ResyncChunk chunk{cluster, {}};
      chunk.list.status_hashes.assign(all.begin() + static_cast<std::ptrdiff_t>(start),
                                      all.begin() + static_cast<std::ptrdiff_t>(end));
      chunks.push_back(std::move(chunk));
    }
  }
  return chunks;
}

bool LostReports::Remember(const std::string& resource_id, const std::string& cluster, int asks) {
  if (resource_id.empty() || cluster.empty() || lost_.size() >= settings_.max_lost) {
    return false;
  }
  lost_.insert_or_assign(resource_id, Lost{cluster, asks});
  return true;
}

void LostReports::AnswerArrived(const std::string& resource_id) {
  if (!asked_.empty()) {
    asked_.erase(resource_id);  // its entry in ask_order_ is skipped when it expires
  }
}

void LostReports::Recovered(const std::string& resource_id) {
  if (!lost_.empty()) {
    lost_.erase(resource_id);
  }
}

LostReports::Expired LostReports::ExpireAsks(TimePoint now) {
  Expired expired;
  while (!ask_order_.empty() && ask_order_.front().first <= now) {
    auto [deadline, resource_id] = std::move(ask_order_.front());
    ask_order_.pop_front();
    auto it = asked_.find(resource_id);
    if (it == asked_.end() || it->second.deadline != deadline) {
      continue;  // answered, or asked again since
    }
    Lost lost = std::move(it->second.lost);
    asked_.erase(it);
    if (++lost.asks >= settings_.asks) {
      ++expired.given_up;
      continue;
    }
    ++expired.asked_again;
    if (!Remember(resource_id, lost.cluster, lost.asks)) {
      expired.full_resync = true;
    }
  }
  return expired;
}

std::size_t LostReports::RoundBudget(std::size_t room, std::size_t max_pending) const {
  // Half the room (rounded up) for the answers, the rest for what the agents report meanwhile;
  // no round of crumbs while much more is lost.
  const std::size_t budget = room - room / 2;
  const bool enough = budget != 0 && (budget >= lost_.size() ||
                                      budget >= std::max<std::size_t>(1, max_pending / 8));
  return enough ? budget : 0;
}

ResyncLists LostReports::TakeRound(std::size_t budget, TimePoint now,
                                   absl::FunctionRef<std::string(const std::string&)> latest_hash) {
  ResyncLists per_cluster;
  const auto deadline = now + settings_.answer_timeout;
  std::size_t asked = 0;
  for (auto it = lost_.begin(); it != lost_.end() && asked < budget; ++asked) {
    per_cluster[it->second.cluster].status_hashes.push_back({it->first, latest_hash(it->first)});
    asked_.insert_or_assign(it->first, Asked{std::move(it->second), deadline});
    ask_order_.emplace_back(deadline, it->first);
    it = lost_.erase(it);
  }
  return per_cluster;
}

bool LostReports::Unask(const cloudevents::ResourceStatusHashList& list) {
  bool remembered = true;
  for (const auto& entry : list.status_hashes) {
    auto asked = asked_.find(entry.resource_id);
    if (asked == asked_.end()) {
      continue;  // a report of it arrived meanwhile
    }
    Lost lost = std::move(asked->second.lost);
    asked_.erase(asked);
    remembered = Remember(entry.resource_id, lost.cluster, lost.asks) && remembered;
  }
  return remembered;
}

void LostReports::Clear() {
  lost_.clear();
  asked_.clear();
  ask_order_.clear();
}

bool LostReports::MayRecheckRoom(TimePoint now) {
  if (now < room_recheck_at_) {
    return false;
  }
  room_recheck_at_ = now + kRoomRecheck;
  return true;
}

}  // namespace mmi::status_sink
