// One libmosquitto MQTT 5 client and its thread, shared by MosquittoSubscriber and
// MosquittoPublisher: connects (Clean Start or a persistent session, TLS / mTLS,
// username/password), drives the socket with poll() and reconnects with backoff forever.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "libs/common/backoff.h"
#include "libs/common/log.h"
#include "libs/transport/metrics.h"
#include "libs/transport/settings.h"

struct mosquitto;
struct mosquitto_message;
struct mqtt5__property;

namespace mmi::transport::internal {

// Every libmosquitto call and every hook runs on the connection's own thread (named at Start()),
// so hooks may call libmosquitto through handle() and need no lock for what only they touch.
// Each connection attempt gets a fresh libmosquitto handle: nothing a lost connection held (a
// publish awaiting its PUBACK) is sent again on the next one; the owner fails it instead.
//
// The CONNECT goes through mosquitto_connect_bind_v5(), whose TCP connect is blocking; a probe
// connect with `dialTimeout` and Stop() in view comes first (Probe()), so an unreachable broker
// holds neither. `dialTimeout` bounds the wait for CONNACK after that too.
//
// Thread-safe. Lifecycle: Start() once, Stop() (idempotent) before destruction.
class MosquittoConnection {
 public:
  struct Hooks {
    // After each CONNACK that accepted the connection; `reconnect` is false the first time;
    // `receive_maximum` is the broker's (65,535 when the CONNACK carries none).
    absl::AnyInvocable<void(bool reconnect, std::size_t receive_maximum)> on_connected;
    // When an accepted connection ends (its handle is gone once this returns).
    absl::AnyInvocable<void()> on_lost;
    // After every turn of the loop: a socket event, a Wake() or a 100 ms tick.
    absl::AnyInvocable<void()> on_turn;
    // About every 100 ms, connected or not (deadlines, log summaries).
    absl::AnyInvocable<void()> on_tick;
    // A SUBACK: its message id and the granted QoS or reason code of each filter.
    absl::AnyInvocable<void(int mid, absl::Span<const int> granted)> on_subscribe;
    // A received PUBLISH and its properties.
    absl::AnyInvocable<void(const mosquitto_message& message, const mqtt5__property* props)>
        on_message;
    // A PUBACK (QoS 1) with its reason code, or a QoS 0 PUBLISH written (reason 0).
    absl::AnyInvocable<void(int mid, int reason_code)> on_publish;
  };

  // `client_id` is the full MQTT client id; `session_expiry` 0 = Clean Start, otherwise a
  // persistent session kept that long (MQTT 5 Session Expiry Interval), resumed on every
  // reconnect. `metrics` and `logger` must outlive this object.
  MosquittoConnection(const MqttSettings& settings, std::string client_id,
                      std::chrono::seconds session_expiry, TransportMetrics& metrics,
                      const log::Logger& logger);
  ~MosquittoConnection();
  MosquittoConnection(const MosquittoConnection&) = delete;
  MosquittoConnection& operator=(const MosquittoConnection&) = delete;

  // Checks what can be checked before connecting (broker address, TLS files: kInvalidArgument /
  // kFailedPrecondition) and starts the thread.
  absl::Status Start(Hooks hooks, const char* thread_name);

  // Stops reconnecting; a standing connection ends with a DISCONNECT (a persistent session stays
  // on the broker). No hook runs after it returns. Must not be called from a hook.
  void Stop();

  // True from an accepted CONNACK until the connection ends.
  bool connected() const { return connected_.load(); }

  // Any thread: makes the loop turn now (runs on_turn), e.g. when there is something to publish.
  void Wake();

  // Connection thread (a hook): ends the current connection; the next one follows the backoff.
  void Drop(std::string reason);

  // Connection thread (a hook) only: the handle of the current connection.
  mosquitto* handle() { return mosq_; }

 private:
  static void OnConnect(mosquitto* mosq, void* self, int reason, int flags,
                        const mqtt5__property* props);
  static void OnSubscribe(mosquitto* mosq, void* self, int mid, int count, const int* granted,
                          const mqtt5__property* props);
  static void OnMessage(mosquitto* mosq, void* self, const mosquitto_message* message,
                        const mqtt5__property* props);
  static void OnPublish(mosquitto* mosq, void* self, int mid, int reason_code,
                        const mqtt5__property* props);
  static void OnDisconnect(mosquitto* mosq, void* self, int reason, const mqtt5__property* props);
  static void OnLog(mosquitto* mosq, void* self, int level, const char* text);

  absl::Status CheckSettings();
  // A configured handle for one connection attempt, or the error that makes it impossible.
  absl::Status NewHandle();
  void Run();
  // One connection attempt, from CONNECT to its end; returns why it ended ("" when stopping).
  std::string RunConnection();
  // Resolves the broker and opens (and closes) a TCP connection to it within `dialTimeout`,
  // waking for a Stop(): libmosquitto's own connect blocks until the kernel gives up on an
  // unreachable address. "" when the broker answered, else why not. The resolver call itself
  // blocks, as every resolver call does.
  std::string Probe();
  // TLS records decrypted and not read yet (poll() cannot see them).
  bool TlsHoldsData();
  // poll() on the socket and the wake-up fd, then libmosquitto's reads, writes and keep-alive.
  int Turn();
  void WaitToRetry(std::string_view reason, bool was_connected);
  bool stopping() const;

  const MqttSettings settings_;
  const std::string client_id_;
  const std::chrono::seconds session_expiry_;
  TransportMetrics& metrics_;
  const log::Logger& logger_;
  std::string host_;
  int port_ = 0;
  int wake_fd_ = -1;  // eventfd
  Hooks hooks_;

  // Connection thread only.
  mosquitto* mosq_ = nullptr;
  mqtt5__property* connect_props_ = nullptr;
  bool accepted_ = false;  // the current connection's CONNACK accepted it
  bool ever_connected_ = false;
  std::string drop_reason_;
  std::string server_disconnect_;  // the broker's DISCONNECT reason, when it sent one
  Backoff backoff_;
  std::chrono::steady_clock::time_point next_tick_;

  std::atomic<bool> connected_{false};
  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace mmi::transport::internal
