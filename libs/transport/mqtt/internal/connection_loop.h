// What the MQTT connection (NativeMqttConnection) does around its connection attempts: the thread
// and its wake-up eventfd, Stop(), the broker address parsed, the TCP connect, the
// owner's tick, the reconnect loop with its backoff and retry logs, and the bookkeeping of an
// accepted CONNACK and of a lost connection (`connected()`, the `mmi_transport_connected` gauge,
// the reconnect count, the connect log).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "libs/common/backoff.h"
#include "libs/common/log.h"
#include "libs/transport/metrics.h"
#include "libs/transport/settings.h"

namespace mmi::transport::internal {

// Milliseconds until `until` for poll(), rounded up (a timeout rounded down to 0 would spin
// through the last millisecond), at most a tick (100 ms).
int PollTimeoutMs(std::chrono::steady_clock::time_point until);

// Thread-safe. Lifecycle: Start() once, Stop() (idempotent) before destruction.
class ConnectionLoop {
 public:
  // One connection attempt, from the TCP connect to its end, on the loop's thread: returns why
  // it ended ("" when stopping). It says goodbye itself when it ends because of Stop().
  using Attempt = absl::AnyInvocable<std::string()>;

  // `client_id` and `session_expiry` (0 = Clean Start) as the connection sends them, for the
  // logs. `metrics` and `logger` must outlive this object.
  ConnectionLoop(const MqttSettings& settings, std::string client_id,
                 std::chrono::seconds session_expiry, TransportMetrics& metrics,
                 const log::Logger& logger);
  ~ConnectionLoop();
  ConnectionLoop(const ConnectionLoop&) = delete;
  ConnectionLoop& operator=(const ConnectionLoop&) = delete;

  // Before Start(): `brokerHost` ("host:port" or "[v6]:port") into host() and the port
  // (kInvalidArgument naming the field otherwise).
  absl::Status ParseBrokerHost();
  const std::string& host() const { return host_; }
  // The keep-alive sent in CONNECT: `keepAlive`, at least 5 s; 0 becomes the largest (the rule
  // the libmosquitto publisher had, kept so that the setting means what it did).
  uint16_t keep_alive_s() const;

  // Starts the thread `thread_name` (SIGPIPE blocked on it: a write to a socket the broker closed
  // fails with EPIPE), which runs `attempt` until Stop(), waiting the backoff between attempts.
  // `on_tick` runs about every 100 ms meanwhile, and from TickIfDue() during an attempt. After an
  // attempt that Accepted() a connection, `*on_lost` runs unless empty (the owner's hook; it must
  // outlive this object).
  absl::Status Start(const char* thread_name, Attempt attempt, absl::AnyInvocable<void()>* on_lost,
                     absl::AnyInvocable<void()> on_tick);

  // Stops reconnecting, wakes the thread and joins it.
  void Stop();
  bool stopping() const;
  // Any thread: wakes the loop thread's Poll().
  void Wake();

  // Loop thread: poll() on `fd` for `events` and on the wake-up eventfd (readable after Wake() or
  // Stop(), drained here) for `timeout_ms`. Returns poll()'s result; `revents` is the socket's.
  int Poll(int fd, short events, int timeout_ms, short& revents) const;
  // Loop thread: waits up to a tick for `events` on `fd` or a wake-up; false once `deadline` has
  // passed.
  bool WaitFor(int fd, short events, std::chrono::steady_clock::time_point deadline) const;
  // Loop thread: resolves host() and connects to each address in turn until one answers,
  // `deadline` passes or Stop() is called ("stopping"), ticking meanwhile. A connected,
  // non-blocking, close-on-exec socket, or -1 and why not in `error`. The resolver call itself
  // blocks, as every resolver call does.
  int Dial(std::chrono::steady_clock::time_point deadline, std::string& error);
  // Loop thread: runs `on_tick` when a tick is due.
  void TickIfDue();
  std::chrono::steady_clock::time_point next_tick() const { return next_tick_; }

  // True from an accepted CONNACK until that connection ends.
  bool connected() const { return connected_.load(); }
  const std::string& client_id() const { return client_id_; }
  std::chrono::seconds session_expiry() const { return session_expiry_; }

  // Loop thread: the current attempt's CONNACK accepted the connection. Returns whether it is a
  // reconnect (not the first accepted connection).
  bool Accepted(bool session_present);
  // Loop thread: whether the current attempt was accepted.
  bool accepted() const { return accepted_; }

 private:
  void Run();
  void WaitToRetry(const std::string& reason, bool was_connected);
  void Tick();

  const MqttSettings& settings_;
  const std::string client_id_;
  const std::chrono::seconds session_expiry_;
  TransportMetrics& metrics_;
  const log::Logger& logger_;
  std::string host_;
  int port_ = 0;
  int wake_fd_ = -1;
  Attempt attempt_;
  absl::AnyInvocable<void()>* on_lost_ = nullptr;
  absl::AnyInvocable<void()> on_tick_;

  // Loop thread only.
  Backoff backoff_;
  bool accepted_ = false;
  bool ever_connected_ = false;
  std::chrono::steady_clock::time_point next_tick_;

  std::atomic<bool> connected_{false};
  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace mmi::transport::internal
