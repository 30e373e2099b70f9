#include "tools/fleet-sim/fleet.h"

#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "libs/common/log.h"

namespace mmi::fleet_sim {
namespace {

using cloudevents::Event;
using nlohmann::json;

const log::Logger& Log() {
  static const log::Logger logger("fleet_sim.agent");
  return logger;
}

}  // namespace

std::string ClusterName(std::string_view prefix, int index, int digits) {
  std::string number = absl::StrCat(index);
  if (static_cast<int>(number.size()) < digits) {
    number.insert(0, static_cast<std::size_t>(digits) - number.size(), '0');
  }
  return absl::StrCat(std::string(prefix), number);
}

Fleet::Fleet(const FleetSettings& settings, const Clock& clock, FleetMetrics& metrics)
    : clock_(clock), metrics_(metrics), sequence_ids_(clock) {
  AgentSettings agent = settings.agent;
  agent.transitions_per_minute =
      settings.clusters > 0 ? settings.changes_per_minute / settings.clusters : 0.0;
  std::mt19937_64 seeds(settings.seed);
  for (int i = 1; i <= settings.clusters; ++i) {
    std::string name = ClusterName(settings.cluster_prefix, i, settings.cluster_digits);
    auto agent_state = std::make_unique<ClusterAgent>(name, agent, clock_, sequence_ids_, seeds());
    agents_.emplace(std::move(name), std::move(agent_state));
  }
  UpdateGauges();
}

std::size_t Fleet::application_count() const { return work_total_; }

json Fleet::Snapshot() const {
  json clusters = json::object();
  for (const auto& [name, agent] : agents_) {
    clusters[name] = agent->Snapshot();
  }
  return {{"clusters", std::move(clusters)},
          {"applications", static_cast<std::int64_t>(application_count())}};
}

ClusterAgent* Fleet::FindForTest(std::string_view cluster) {
  auto it = agents_.find(cluster);
  return it == agents_.end() ? nullptr : it->second.get();
}

void Fleet::UpdateGauges() {
  metrics_.clusters.Set(static_cast<double>(agents_.size()));
  metrics_.applications.Set(static_cast<double>(work_total_));
}

void Fleet::Count(Outcome outcome, const Event& event, std::size_t replies) {
  std::string action = "unknown";
  if (auto type = event.ParsedType(); type.ok()) {
    action = std::string(cloudevents::ActionName(type->action));
  }
  switch (outcome) {
    case Outcome::kApplied:
      metrics_.SpecsReceived(action).Increment();
      metrics_.StatusesSent("apply").Increment(static_cast<double>(replies));
      break;
    case Outcome::kDeleted:
      metrics_.SpecsReceived(action).Increment();
      metrics_.StatusesSent("delete").Increment(static_cast<double>(replies));
      break;
    case Outcome::kStale:
      metrics_.SpecsReceived(action).Increment();
      metrics_.Rejected("stale").Increment();
      break;
    case Outcome::kStatusResync:
      metrics_.status_resyncs_answered.Increment();
      metrics_.StatusesSent("resync").Increment(static_cast<double>(replies));
      break;
    case Outcome::kOtherCluster:
      metrics_.Rejected("other_cluster").Increment();
      break;
    case Outcome::kIgnored:
      metrics_.Rejected("unsupported").Increment();
      break;
  }
}

std::vector<Event> Fleet::Handle(std::string_view topic_cluster,
                                 const absl::StatusOr<Event>& event) {
  std::vector<Event> out;
  if (!event.ok()) {
    metrics_.Rejected("malformed").Increment();
    Log().Debug("dropped an undecodable event", {{"error", std::string(event.status().message())}});
    return out;
  }
  std::string target(topic_cluster);
  if (target.empty()) {
    auto cluster = event->ClusterName();
    if (!cluster.ok()) {
      metrics_.Rejected("malformed").Increment();
      return out;
    }
    target = *cluster;
  }
  std::vector<ClusterAgent*> recipients;
  if (target.empty()) {
    // `clustername` "" on a status resync request: every cluster answers (§1.4).
    for (auto& [name, agent] : agents_) {
      recipients.push_back(agent.get());
    }
  } else if (auto it = agents_.find(target); it != agents_.end()) {
    recipients.push_back(it->second.get());
  } else {
    metrics_.Rejected("unknown_cluster").Increment();
    return out;
  }
  for (ClusterAgent* agent : recipients) {
    const std::size_t before = agent->work_count();
    auto result = agent->Handle(*event);
    work_total_ = work_total_ + agent->work_count() - before;
    if (!result.ok()) {
      metrics_.Rejected("malformed").Increment();
      Log().Debug("dropped a malformed event", {{"cluster", agent->cluster()},
                                                {"event_id", event->id},
                                                {"error", std::string(result.status().message())}});
      continue;
    }
    Count(result->outcome, *event, result->replies.size());
    for (Event& reply : result->replies) {
      out.push_back(std::move(reply));
    }
  }
  UpdateGauges();
  return out;
}

std::vector<Event> Fleet::SpecResyncRequests(const std::vector<std::string>& clusters) {
  std::vector<Event> out;
  if (clusters.empty()) {
    out.reserve(agents_.size());
    for (auto& [name, agent] : agents_) {
      out.push_back(agent->SpecResyncRequest());
    }
  } else {
    out.reserve(clusters.size());
    for (const std::string& cluster : clusters) {
      if (auto it = agents_.find(cluster); it != agents_.end()) {
        out.push_back(it->second->SpecResyncRequest());
      }
    }
  }
  metrics_.spec_resyncs_sent.Increment(static_cast<double>(out.size()));
  return out;
}

std::vector<Event> Fleet::Tick(bool postpone_refreshes) {
  std::vector<Event> out;
  ClusterAgent::TickCounts counts;
  for (auto& [name, agent] : agents_) {
    for (Event& event : agent->Tick(&counts, postpone_refreshes)) {
      out.push_back(std::move(event));
    }
  }
  if (counts.refreshes > 0) {
    metrics_.StatusesSent("refresh").Increment(counts.refreshes);
  }
  if (counts.transitions > 0) {
    metrics_.StatusesSent("transition").Increment(counts.transitions);
  }
  if (counts.postponed > 0) {
    metrics_.refreshes_postponed.Increment(counts.postponed);
  }
  if (counts.sync_steps > 0) {
    metrics_.StatusesSent("sync").Increment(counts.sync_steps);
  }
  return out;
}

}  // namespace mmi::fleet_sim
