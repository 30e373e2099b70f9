// The publisher's MQTT 5 connection on libmosquitto (MosquittoPublisher): one client and its
// thread, which connects (Clean Start, TLS / mTLS, username/password), drives the socket with
// poll() and reconnects with backoff forever (ConnectionLoop).
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "libs/common/log.h"
#include "libs/transport/metrics.h"
#include "libs/transport/mqtt/internal/connection_loop.h"
#include "libs/transport/settings.h"

struct mosquitto;
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
    // About every 100 ms, connected or not (deadlines).
    absl::AnyInvocable<void()> on_tick;
    // A PUBACK (QoS 1) with its reason code, or a QoS 0 PUBLISH written (reason 0).
    absl::AnyInvocable<void(int mid, int reason_code)> on_publish;
  };

  // `client_id` is the full MQTT client id. `settings`, `metrics` and `logger` must outlive this
  // object.
  MosquittoConnection(const MqttSettings& settings, std::string client_id,
                      TransportMetrics& metrics, const log::Logger& logger);
  ~MosquittoConnection();
  MosquittoConnection(const MosquittoConnection&) = delete;
  MosquittoConnection& operator=(const MosquittoConnection&) = delete;

  // Checks what can be checked before connecting (broker address, TLS files: kInvalidArgument /
  // kFailedPrecondition) and starts the thread.
  absl::Status Start(Hooks hooks, const char* thread_name);

  // Stops reconnecting; a standing connection ends with a DISCONNECT. No hook runs after it
  // returns. Must not be called from a hook.
  void Stop() { loop_.Stop(); }

  // True from an accepted CONNACK until the connection ends.
  bool connected() const { return loop_.connected(); }

  // Any thread: makes the loop turn now (runs on_turn), e.g. when there is something to publish.
  void Wake() { loop_.Wake(); }

  // Connection thread (a hook) only: the handle of the current connection.
  mosquitto* handle() { return mosq_; }

 private:
  static void OnConnect(mosquitto* mosq, void* self, int reason, int flags,
                        const mqtt5__property* props);
  static void OnPublish(mosquitto* mosq, void* self, int mid, int reason_code,
                        const mqtt5__property* props);
  static void OnDisconnect(mosquitto* mosq, void* self, int reason, const mqtt5__property* props);
  static void OnLog(mosquitto* mosq, void* self, int level, const char* text);

  // A configured handle for one connection attempt, or the error that makes it impossible.
  absl::Status NewHandle();
  absl::Status ConfigureTls();
  // One connection attempt (ConnectionLoop::Attempt), its handle destroyed when it ends.
  std::string Attempt();
  // From CONNECT to the end of the connection; returns why it ended ("" when stopping).
  std::string RunConnection();
  // The probe (see above): ConnectionLoop::Dial(), the socket closed at once. "" when the broker
  // answered, else why not.
  std::string Probe();
  // TLS records decrypted and not read yet (poll() cannot see them).
  bool TlsHoldsData();
  // poll() on the socket and the wake-up fd, then libmosquitto's reads, writes and keep-alive.
  int Turn();
  // Reads every packet already waiting (up to kMaxReadsPerTurn).
  int ReadWaiting();

  const MqttSettings settings_;
  const log::Logger& logger_;
  Hooks hooks_;
  ConnectionLoop loop_;

  // Connection thread only.
  mosquitto* mosq_ = nullptr;
  std::string drop_reason_;        // set when the broker refused the connection: ends it
  std::string server_disconnect_;  // the broker's DISCONNECT reason, when it sent one
};

}  // namespace mmi::transport::internal
