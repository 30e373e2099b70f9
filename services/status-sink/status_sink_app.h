// Wiring of the status sink: settings -> hub client, PostgreSQL (migrations, pool, store),
// transport, worker pools, Writer, Sink, leader election and the admin endpoint. The only place
// (with main.cc) that names concrete implementations.
//
// Threads (see README.md): the sink loop, `status-writers` (hub PATCHes), `status-store`
// (database calls), the leader elector, the lead-start thread, the admin server's workers, and
// the transport library's own threads.
//
// Only the leader subscribes and writes, so two replicas never write one Application. Losing the
// lease stops the sink at once and Wait() returns 1 (the pod restarts as a candidate). /readyz
// reflects dependencies only, so a standby is ready; leadership is exported as
// mmi_leader_election_is_leader and logged (libs/service/hub.h), as in the dispatcher.
#pragma once

#include <atomic>
#include <memory>
#include <thread>

#include "absl/status/status.h"
#include "libs/service/stop_latch.h"
#include "prometheus/registry.h"
#include "services/status-sink/settings.h"

namespace mmi::status_sink {

class StatusSinkApp {
 public:
  explicit StatusSinkApp(StatusSinkSettings settings);
  ~StatusSinkApp();  // Stop()
  StatusSinkApp(const StatusSinkApp&) = delete;
  StatusSinkApp& operator=(const StatusSinkApp&) = delete;

  // Builds and starts everything; the sink itself starts once this replica leads. Start-up
  // errors (bad kubeconfig, database unreachable for the migrations, ...) are returned.
  absl::Status Start();
  // Blocks until RequestStop() or a lost leadership. Returns the process exit code: 0 after
  // RequestStop(), 1 after losing the lease.
  int Wait();
  // Thread-safe; wakes Wait().
  void RequestStop();
  // Drains (up to shutdownTimeout) and stops everything in reverse order. Idempotent.
  void Stop();

  bool leading() const { return leading_.load(); }
  // True once the sink resumed from the store and subscribed.
  bool sink_ready() const;
  prometheus::Registry& registry() { return *registry_; }
  int admin_port() const;

 private:
  struct Components;
  void StartLeading();
  void OnLostLeadership();

  const StatusSinkSettings settings_;
  std::shared_ptr<prometheus::Registry> registry_ = std::make_shared<prometheus::Registry>();
  std::unique_ptr<Components> c_;
  std::atomic<bool> leading_{false};
  std::atomic<bool> stopping_{false};
  service::StopLatch stop_;  // exit code 1 after a lost lease
  std::thread lead_thread_;
  bool stopped_ = false;
};

// main(): settings from flags/file/env, SIGTERM/SIGINT handling, exit code.
int StatusSinkMain(int argc, char** argv);

}  // namespace mmi::status_sink
