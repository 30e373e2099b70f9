// LISTEN on one PostgreSQL channel, with a sweep after every (re)subscription: notifications are
// not queued while nobody listens, so whatever the sweep finds (what a notification would have
// said while the connection was down) is handed to the same callback. The deletion
// confirmations of the dispatcher (deletion_listener.h) and the manifest renders of the status
// sink (kManifestRenderChannel) both listen this way.
//
// Threads: one listener thread with its own libpqxx connection for LISTEN (never shared; the
// sweep uses whatever it closes over, typically a store). The callback runs on that thread and
// must only hand the payload on. A lost connection or a failed sweep is logged, and the listener
// reconnects and sweeps again after a backoff.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <stop_token>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "libs/common/backoff.h"
#include "libs/common/log.h"
#include "libs/common/sleeper.h"

namespace mmi::store::postgres {

struct NotificationListenerSettings {
  std::string dsn;      // libpq connection string (never logged)
  std::string channel;  // the NOTIFY channel
  std::string what;     // what the notifications are, for the log: "deletion confirmations"
  std::string logger = "store.listener";  // the log component
  // Longest wait for a notification before checking for Stop().
  std::chrono::milliseconds poll{500};
  BackoffSettings reconnect{.initial = std::chrono::milliseconds(500),
                            .max = std::chrono::milliseconds(30'000),
                            .multiplier = 2.0,
                            .jitter = 0.2};
};

class NotificationListener {
 public:
  // One notification's payload (empty payloads are not passed on).
  using Callback = std::function<void(const std::string& payload)>;
  // Runs once LISTEN is active on a new connection; calls its argument for every payload a
  // missed notification would have carried. An error counts as a lost connection.
  using Sweep = std::function<absl::Status(const Callback& missed)>;

  NotificationListener(NotificationListenerSettings settings, Sweep sweep);
  ~NotificationListener();  // Stop()
  NotificationListener(const NotificationListener&) = delete;
  NotificationListener& operator=(const NotificationListener&) = delete;

  void Start(Callback on_notified);
  void Stop();  // joins the thread; idempotent
  // True while LISTEN is active on a live connection.
  bool connected() const { return connected_.load(); }
  // Completed (re)connections with their sweep.
  int connections() const { return connections_.load(); }

 private:
  void Run(const std::stop_token& stop);
  // One LISTEN session: OK once `stop` is requested; the error when the connection or the
  // sweep failed.
  absl::Status Listen(const std::stop_token& stop, Backoff& backoff);

  const NotificationListenerSettings settings_;
  const log::Logger log_;
  Sweep sweep_;
  Callback on_notified_;  // set by Start() before the thread starts
  std::atomic<bool> connected_{false};
  std::atomic<int> connections_{0};
  // Reconnect backoff, in real time; Stop() ends it through the thread's stop token.
  Sleeper& sleeper_;
  std::jthread thread_;
};

}  // namespace mmi::store::postgres
