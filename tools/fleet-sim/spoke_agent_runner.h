// Runs one SpokeWorkAgent (spoke_work_agent.h) on its own worker thread ("spoke-<cluster>", as
// few as there are real spokes), so that its blocking API server calls never hold up the fleet
// loop: received events and spec resync cues are posted to it, the watches of the collections
// its works use post the changes of their objects to it, and every `resync` it re-reads every
// object (the work agent's status sync). What the agent answers goes to the sink.
//
// Threads: the worker, plus one watch thread per watched collection (started as works need
// them). Thread-safe. Lifecycle: Start() once, Stop() (idempotent) before destruction. The
// client and the agent's borrowed collaborators must outlive the runner.
#pragma once

#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/synchronization/mutex.h"
#include "libs/cloudevents/event.h"
#include "libs/kube/kube_client.h"
#include "tools/fleet-sim/spoke_work_agent.h"

namespace mmi::fleet_sim {

struct SpokeRunnerSettings {
  // How often every held object is re-read and changed statuses reported (the work agent's
  // --status-sync-interval, 10 s by default), besides what the watches report at once.
  std::chrono::milliseconds resync{10'000};
  // Wait before a watch that ended or failed starts again.
  std::chrono::milliseconds watch_retry{1'000};
};

// Runs on the worker thread with the events to publish; must only enqueue.
using SpokeEventSink = absl::AnyInvocable<void(std::vector<cloudevents::Event> events)>;

class SpokeAgentRunner {
 public:
  SpokeAgentRunner(std::unique_ptr<SpokeWorkAgent> agent, kube::KubeClient& client,
                   SpokeRunnerSettings settings);
  ~SpokeAgentRunner();
  SpokeAgentRunner(const SpokeAgentRunner&) = delete;
  SpokeAgentRunner& operator=(const SpokeAgentRunner&) = delete;

  const std::string& cluster() const { return cluster_; }

  void Start(SpokeEventSink sink);
  // Non-blocking: an event for this cluster (or a status resync request for all of them).
  void Post(cloudevents::Event event);
  // Non-blocking: send the spec resync request (the subscription became active).
  void PostSpecResync();
  // Idempotent; the sink is not called after it returns.
  void Stop();

 private:
  struct SpecResyncCue {};
  struct ObjectEvent {
    kube::ResourceRef ref;
    nlohmann::json object;
    bool deleted = false;
  };
  using Task = std::variant<cloudevents::Event, SpecResyncCue, ObjectEvent>;

  void Enqueue(Task task);
  void Loop();
  void Run(Task& task);
  // Starts a watch thread for each collection the agent needs and has none yet.
  void StartWatches();
  void WatchLoop(const kube::ResourceRef& ref, const std::stop_token& stop);

  const std::string cluster_;
  const std::unique_ptr<SpokeWorkAgent> agent_;  // worker thread only
  kube::KubeClient& client_;
  const SpokeRunnerSettings settings_;
  SpokeEventSink sink_;

  absl::Mutex mu_;
  std::deque<Task> tasks_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread worker_;
  std::map<std::string, std::jthread> watches_;  // by collection path; worker thread only
};

}  // namespace mmi::fleet_sim
