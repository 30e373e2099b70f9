// The fleet simulator: one loop thread ("fleet-loop") that owns the Fleet (fleet.h), fed by
// an AgentTransport. Received events and (re)subscription cues go through a bounded intake queue
// to the loop, which hands them to the simulated agents and publishes their answers; every
// `tick` the loop also collects the churn that is due (reconciledAt refreshes, sync/health
// transitions) and publishes it in slices, taking the intake between slices, so that specs and
// resync requests never wait behind a whole tick's churn. After each (re)subscription every
// cluster sends its spec resync request (§6.5).
//
// Thread-safe. Lifecycle: Start() once, Stop() (idempotent) before destruction. The transport,
// clock and metrics are borrowed and must outlive the simulator.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <variant>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "libs/common/clock.h"
#include "nlohmann/json.hpp"
#include "tools/fleet-sim/agent_transport.h"
#include "tools/fleet-sim/fleet.h"
#include "tools/fleet-sim/fleet_metrics.h"
#include "tools/fleet-sim/spoke_agent_runner.h"

namespace mmi::fleet_sim {

struct SimulatorSettings {
  FleetSettings fleet;
  // How often due churn is collected and published.
  std::chrono::milliseconds tick{1'000};
  // Received events waiting for the loop; beyond this they are dropped and counted
  // (mmi_fleet_sim_intake_dropped_total; only a spec resync, i.e. a restart, recovers them).
  // One process speaks for every agent, so this is the fleet's queue: as large as the broker's
  // per-client queue (tests/peers/bin/start-mosquitto), so that a cold start of 300,000
  // Applications published faster than the simulator takes them loses nothing (~3 KB each).
  std::size_t max_intake = 1'000'000;
  // Publishes the transport refused or the broker did not acknowledge wait here and are sent
  // again on the next tick while connected (an agent does not lose its status); beyond this many
  // the oldest are dropped and counted (the source's status resync recovers them).
  std::size_t max_retry = 200'000;
  // While more received events than this wait in the intake, due reconciledAt refreshes are
  // postponed one interval (mmi_fleet_sim_refreshes_postponed_total): one loop speaks for every
  // agent, and at 300,000 Applications their refreshes (~2,000/s) alone can take all of it, so
  // that specs wait for minutes behind them. 0 = never postpone.
  std::size_t postpone_refreshes_above = 10'000;
  // Churn events published per slice before the loop takes the intake again. When the transport
  // is slower than the churn (300,000 Applications refresh ~2,000 times/s; one process on a small
  // machine publishes a few hundred/s), a tick's churn takes minutes to publish; answers to what
  // the sources send (specs, status resync requests) go out between its slices, and the next
  // tick collects what fell due meanwhile once the churn is out.
  std::size_t churn_slice = 1'000;
};

class FleetSimulator {
 public:
  FleetSimulator(SimulatorSettings settings, AgentTransport& transport, const Clock& clock,
                 FleetMetrics& metrics);
  ~FleetSimulator();
  FleetSimulator(const FleetSimulator&) = delete;
  FleetSimulator& operator=(const FleetSimulator&) = delete;

  // Before Start(): `spoke` speaks for its cluster instead of a simulated agent (apply mode,
  // spoke_agent_runner.h): the events for that cluster, status resync requests for every
  // cluster and the spec resync cues are posted to it, and what it answers is published by the
  // loop. Started by Start() and stopped by Stop(); borrowed, and must outlive the simulator.
  void AddSpoke(SpokeAgentRunner& spoke);

  // Starts the loop, the spokes, then the transport.
  absl::Status Start();
  // Stops the transport's intake, the spokes, then the loop. Idempotent.
  void Stop();

  // Thread-safe snapshots for health checks and tests.
  bool connected() const { return transport_.connected(); }
  std::size_t application_count() const { return applications_.load(); }
  // How many times the agents have sent their spec resync requests.
  int resync_rounds() const { return resync_rounds_.load(); }

  // Posts a request for Fleet::Snapshot() to the loop, which runs `done` with it (on the loop
  // thread, after the events received before this call) unless the simulator stops first. Never
  // dropped by the intake bound. `done` must not call back into the simulator.
  using SnapshotCallback = absl::AnyInvocable<void(nlohmann::json) &&>;
  void RequestSnapshot(SnapshotCallback done);

 private:
  struct SnapshotRequest {
    SnapshotCallback done;
  };
  // What a spoke answered, to publish.
  struct SpokeReplies {
    std::vector<cloudevents::Event> events;
  };
  using Item = std::variant<ReceivedEvent, Subscription, SnapshotRequest, SpokeReplies>;

  void Enqueue(Item item);
  void Loop();
  // One item of the intake, on the loop thread.
  void HandleItem(Item& item);
  // The transport (re)subscribed `subscription.clusters`: their spec resync requests.
  void Subscribed(const Subscription& subscription);
  // Due publish retries and the next tick of churn (into churn_), on the loop thread.
  void Tick();
  // Hands a received event to the spoke it is for; false when it is for the simulated fleet
  // only. A status resync request for every cluster goes to every spoke and to the fleet.
  bool RouteToSpokes(const ReceivedEvent& received);
  void PublishAll(std::vector<cloudevents::Event> events);
  // Publishes once; a failure queues the event for the next tick.
  void PublishOne(cloudevents::Event event);
  void OnPublishFailed(cloudevents::Event event);

  const SimulatorSettings settings_;
  AgentTransport& transport_;
  const Clock& clock_;
  FleetMetrics& metrics_;
  Fleet fleet_;  // loop thread only (and constructor)
  std::map<std::string, SpokeAgentRunner*, std::less<>> spokes_;  // set before Start()

  absl::Mutex mu_;
  std::deque<Item> intake_ ABSL_GUARDED_BY(mu_);
  std::deque<cloudevents::Event> retry_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool started_ = false;
  std::thread thread_;
  // The collected churn not yet published (loop thread only).
  std::deque<cloudevents::Event> churn_;
  std::atomic<std::size_t> applications_{0};
  std::atomic<int> resync_rounds_{0};
};

}  // namespace mmi::fleet_sim
