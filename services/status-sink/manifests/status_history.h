// Manifest delivery: what an Application `.status` built by ApplicationStatusOf (which only
// sees the present) must carry over from the statuses written before it, as Argo CD's
// application-controller keeps it:
//   - `health.lastTransitionTime`: the time the health status last changed;
//   - a condition's `lastTransitionTime`, while a condition of that type keeps its message;
//   - `history[]`: one entry per revision whose operation reached Succeeded (id, revision,
//     deployStartedAt, deployedAt, source), newest last, at most `max_history` (Argo CD's
//     default revisionHistoryLimit, 10).
//
// Where it lives: in this object, per resource, on the sink's loop. The hub Application holds
// it too, but the sink never reads the hub (one GET per write would double the hub traffic), and
// resource_status (migrations/0002) has no room for it. After a restart the first status
// written for a resource starts over: its health and condition times become the time of that
// write and `history[]` holds the revisions succeeded since (docs: the sink README, "Manifest
// delivery status").
//
// Pure and not thread-safe: owned by the sink's loop thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

#include "nlohmann/json.hpp"

namespace mmi::status_sink {

class StatusHistory {
 public:
  explicit StatusHistory(std::size_t max_history = 10) : max_history_(max_history) {}

  // Sets the kept times and `history` in `status` (an ApplicationStatusOf result built at
  // `now`) and remembers them for the next status of `resource_id`.
  void Apply(const std::string& resource_id, nlohmann::json& status,
             std::chrono::system_clock::time_point now);
  // Forgets a resource (deleted, or no longer in manifest delivery).
  void Forget(const std::string& resource_id) { kept_.erase(resource_id); }
  std::size_t size() const { return kept_.size(); }

 private:
  struct KeptCondition {
    std::string type;
    std::string message;
    std::string since;
  };
  struct Deployed {
    std::int64_t id = 0;
    std::string revision;
    std::string started_at;
    std::string deployed_at;
    nlohmann::json source;  // null when the hub's source is not known
  };
  struct Kept {
    std::string health;
    std::string health_since;
    std::vector<KeptCondition> conditions;
    std::deque<Deployed> history;
  };

  void KeepHealth(Kept& kept, nlohmann::json& status, const std::string& now) const;
  void KeepConditions(Kept& kept, nlohmann::json& status, const std::string& now) const;
  void KeepHistory(Kept& kept, nlohmann::json& status) const;

  const std::size_t max_history_;
  std::unordered_map<std::string, Kept> kept_;
};

}  // namespace mmi::status_sink
