// DispatcherApp: wiring only. Builds every dispatcher component from DispatcherSettings, starts
// them in dependency order and stops them in reverse (STYLE.md §5). See README.md for the
// threads and the start/stop sequence.
//
// Lifecycle: construct, Start(), Wait() (returns on RequestStop(), e.g. from the signal thread,
// or when leadership is lost), Stop() (graceful: stops intake, drains the
// outbox within settings.shutdown_timeout, flushes the transport, releases the Lease).
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "libs/service/stop_latch.h"
#include "services/dispatcher/settings.h"

namespace mmi::dispatcher {

class DispatcherApp {
 public:
  explicit DispatcherApp(DispatcherSettings settings);
  ~DispatcherApp();  // Stop()
  DispatcherApp(const DispatcherApp&) = delete;
  DispatcherApp& operator=(const DispatcherApp&) = delete;

  // Connects and starts everything (migrations first). An error names what failed; the caller
  // logs it and exits non-zero.
  absl::Status Start();
  // Any thread, async-signal-unsafe (call from a signal-handling thread).
  void RequestStop();
  // Blocks until RequestStop() or a lost leadership. Returns the exit code: 0 for a requested
  // stop, 1 when leadership was lost (Kubernetes restarts the pod, as controller-runtime does).
  int Wait();
  // Graceful shutdown. Idempotent. Returns true when the outbox drained in time; gives up
  // early when the transport has been disconnected for 2 s (nothing would drain).
  bool Stop();

  // After Start().
  int admin_port() const;
  bool leading() const { return leading_.load(); }
  // Events recorded but not yet accepted by the broker.
  size_t outbox_pending() const;
  // True once the dispatch state is loaded and decisions are being made.
  bool dispatching() const;

 private:
  struct Components;
  // Start() in steps, each filling its part of Components.
  absl::Status OpenStore();
  absl::Status OpenTransport(Clock& clock);
  absl::Status BuildManifests(Clock& clock);
  // Whether the Application informer's first list streams (dispatch.firstList; `auto` asks the
  // store whether anything was ever dispatched).
  bool StreamsFirstList();
  void BuildApplications(Clock& clock, bool stream_first_list);
  void AddHealthChecks(Clock& clock);
  void StartLeading();
  void OnLostLeadership();
  // Waits for the outbox until it drains, `deadline`, or the transport stays disconnected.
  static bool DrainOutbox(Components& c, std::chrono::steady_clock::time_point deadline);

  DispatcherSettings settings_;
  std::unique_ptr<Components> c_;
  std::atomic<bool> leading_{false};
  std::atomic<bool> stopping_{false};
  service::StopLatch stop_;  // exit code 1 after lost leadership
  bool stopped_ = false;
};

// main(): parses flags/config/environment, runs the app until SIGTERM/SIGINT (libs/service/run.h)
// and returns the process exit code (non-zero on bad configuration, start-up failure or lost
// leadership).
int DispatcherMain(int argc, char** argv);

}  // namespace mmi::dispatcher
