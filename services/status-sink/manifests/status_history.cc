#include "services/status-sink/manifests/status_history.h"

#include <utility>

#include "libs/kube_object/object.h"

namespace mmi::status_sink {

void StatusHistory::Apply(const std::string& resource_id, nlohmann::json& status,
                          std::chrono::system_clock::time_point now) {
  const std::string at = kube::KubeTime(now);
  Kept& kept = kept_[resource_id];
  KeepHealth(kept, status, at);
  KeepConditions(kept, status, at);
  KeepHistory(kept, status);
}

void StatusHistory::KeepHealth(Kept& kept, nlohmann::json& status, const std::string& now) const {
  auto health = status.find("health");
  if (health == status.end() || !health->is_object()) {
    return;
  }
  const std::string current = kube::StringAt(*health, "status");
  if (kept.health_since.empty() || current != kept.health) {
    kept.health = current;
    kept.health_since = now;
  }
  (*health)["lastTransitionTime"] = kept.health_since;
}

void StatusHistory::KeepConditions(Kept& kept, nlohmann::json& status,
                                   const std::string& now) const {
  std::vector<KeptCondition> next;
  auto conditions = status.find("conditions");
  if (conditions != status.end() && conditions->is_array()) {
    for (nlohmann::json& condition : *conditions) {
      KeptCondition c{kube::StringAt(condition, "type"), kube::StringAt(condition, "message"), now};
      for (const KeptCondition& before : kept.conditions) {
        if (before.type == c.type && before.message == c.message) {
          c.since = before.since;
          break;
        }
      }
      condition["lastTransitionTime"] = c.since;
      next.push_back(std::move(c));
    }
  }
  kept.conditions = std::move(next);
}

void StatusHistory::KeepHistory(Kept& kept, nlohmann::json& status) const {
  const nlohmann::json& state = kube::ObjectAt(status, "operationState");
  const nlohmann::json& result = kube::ObjectAt(state, "syncResult");
  const std::string revision = kube::StringAt(result, "revision");
  if (kube::StringAt(state, "phase") == "Succeeded" &&
      (kept.history.empty() || kept.history.back().revision != revision)) {
    Deployed entry;
    entry.id = kept.history.empty() ? 0 : kept.history.back().id + 1;
    entry.revision = revision;
    entry.started_at = kube::StringAt(state, "startedAt");
    entry.deployed_at = kube::StringAt(state, "finishedAt");
    entry.source = kube::FieldAt(result, "source");
    kept.history.push_back(std::move(entry));
    while (kept.history.size() > max_history_) {
      kept.history.pop_front();
    }
  }
  if (kept.history.empty()) {
    return;
  }
  nlohmann::json history = nlohmann::json::array();
  for (const Deployed& d : kept.history) {
    nlohmann::json entry = {{"id", d.id},
                            {"revision", d.revision},
                            {"deployStartedAt", d.started_at},
                            {"deployedAt", d.deployed_at},
                            {"initiatedBy", {{"automated", true}}}};
    if (!d.source.is_null()) {
      entry["source"] = d.source;
    }
    history.push_back(std::move(entry));
  }
  status["history"] = std::move(history);
}

}  // namespace mmi::status_sink
