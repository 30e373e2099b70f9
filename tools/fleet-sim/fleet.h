// `Fleet` routes received events to the right ClusterAgent (agent_state.h) by the cluster
// segment of the topic or the `clustername` extension (`""` on a status resync request = every
// cluster), counts everything in FleetMetrics and never fails: malformed or foreign events are
// counted and dropped, the way a Go agent logs and drops them.
//
// Thread-compatible: one owner thread (the simulator loop) calls everything.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "libs/cloudevents/event.h"
#include "libs/cloudevents/sequence_id.h"
#include "libs/common/clock.h"
#include "nlohmann/json.hpp"
#include "tools/fleet-sim/agent_state.h"
#include "tools/fleet-sim/fleet_metrics.h"

namespace mmi::fleet_sim {

struct FleetSettings {
  // Clusters are named `<cluster_prefix><i>` for i in [1, clusters], i zero-padded to
  // `cluster_digits` digits (0 = no padding), e.g. prefix "cluster-", 4 digits: cluster-0001.
  std::string cluster_prefix = "cluster";
  int cluster_digits = 0;
  int clusters = 1;
  // Sync/health transitions per minute across the whole fleet (spread evenly over clusters).
  double changes_per_minute = 0.0;
  AgentSettings agent;  // agent.transitions_per_minute is derived from changes_per_minute
  std::uint64_t seed = 1;
};

// The cluster name for index i (1-based): `<prefix><i>`, i zero-padded to `digits` digits.
std::string ClusterName(std::string_view prefix, int index, int digits = 0);

class Fleet {
 public:
  // `clock` and `metrics` are borrowed and must outlive the fleet.
  Fleet(const FleetSettings& settings, const Clock& clock, FleetMetrics& metrics);

  // Handles one received event. `topic_cluster` is the cluster segment of the topic it arrived
  // on ("" when the transport has none, e.g. Kafka or a broadcast topic); `event` is the decode
  // result. Returns the events to publish. Never fails: problems are counted.
  std::vector<cloudevents::Event> Handle(std::string_view topic_cluster,
                                         const absl::StatusOr<cloudevents::Event>& event);

  // One spec resync request per cluster of `clusters` (after their subscription became active);
  // every cluster when `clusters` is empty. Names the fleet does not simulate are skipped.
  std::vector<cloudevents::Event> SpecResyncRequests(const std::vector<std::string>& clusters = {});

  // Churn due now, across all clusters (see ClusterAgent::Tick for `postpone_refreshes`).
  std::vector<cloudevents::Event> Tick(bool postpone_refreshes = false);

  std::size_t cluster_count() const { return agents_.size(); }
  // {"clusters": {<cluster>: ClusterAgent::Snapshot()}, "applications": N}.
  nlohmann::json Snapshot() const;
  // Works held across the fleet. O(1).
  std::size_t application_count() const;
  // nullptr when the cluster is not simulated.
  ClusterAgent* FindForTest(std::string_view cluster);

 private:
  void Count(Outcome outcome, const cloudevents::Event& event, std::size_t replies);
  void UpdateGauges();

  const Clock& clock_;
  FleetMetrics& metrics_;
  cloudevents::SequenceIdGenerator sequence_ids_;
  std::map<std::string, std::unique_ptr<ClusterAgent>, std::less<>> agents_;
  std::size_t work_total_ = 0;  // sum of the agents' work counts, kept incrementally
};

}  // namespace mmi::fleet_sim
