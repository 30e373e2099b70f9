// One Paho MQTT v5 client and its reconnect loop, shared by MqttPublisher and MqttSubscriber.
#pragma once

#include <mqtt/async_client.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "libs/common/backoff.h"
#include "libs/common/log.h"
#include "libs/transport/metrics.h"
#include "libs/transport/mqtt/internal/publish_window.h"
#include "libs/transport/settings.h"

namespace mmi::transport::internal {

// Connects with MQTT 5, Clean Start and no session expiry (maestro-protocol.md §3.1), retries
// with exponential backoff forever, and runs the owner's hooks on its own thread
// ("mqtt-conn"), never on Paho's, so that hooks may call into the client.
//
// Thread-safe. Lifecycle: Start() once, Stop() (idempotent) before destruction.
class MqttConnection {
 public:
  struct Hooks {
    // Connection thread, after each successful CONNECT; `reconnect` is false the first time.
    absl::AnyInvocable<void(bool reconnect)> on_connected;
    // Paho's thread, when an established connection drops.
    absl::AnyInvocable<void()> on_lost;
    // Paho's thread, for every received PUBLISH. May be empty.
    absl::AnyInvocable<void(mqtt::const_message_ptr)> on_message;
    // Connection thread, about every 100 ms (deadline checks). May be empty.
    absl::AnyInvocable<void()> on_tick;
  };

  // `client_id` is the full MQTT client id. `metrics` and `logger` must outlive this object.
  // `session_expiry` 0 = Clean Start; otherwise a persistent session kept that long (MQTT 5
  // Session Expiry Interval), resumed on every reconnect.
  MqttConnection(const MqttSettings& settings, std::string client_id, TransportMetrics& metrics,
                 const log::Logger& logger,
                 std::chrono::seconds session_expiry = std::chrono::seconds(0));
  ~MqttConnection();
  MqttConnection(const MqttConnection&) = delete;
  MqttConnection& operator=(const MqttConnection&) = delete;

  // Builds the client (kFailedPrecondition when a TLS file is missing, kInvalidArgument when
  // Paho rejects the options) and starts connecting in the background.
  absl::Status Start(Hooks hooks);

  // Stops reconnecting, disconnects (waiting at most `timeout`) and destroys the client; no hook
  // runs after it returns.
  void Stop(std::chrono::milliseconds timeout);

  bool connected() const;
  // The broker's Receive Maximum from its last CONNACK (65,535 when it sent none).
  size_t receive_maximum() const { return receive_maximum_.load(); }

  // Drops the connection and connects again after a backoff delay (e.g. a SUBSCRIBE failed).
  // Safe from any thread, including Paho's.
  void ForceReconnect(std::string_view reason);

  // The client, for publish/subscribe calls. Valid from Start() until Stop(); callers must not
  // use it concurrently with Stop() (the owners guard this with their own lock).
  mqtt::async_client& client() { return *client_; }

 private:
  enum class State { kIdle, kDisconnected, kConnecting, kJustConnected, kConnected, kDropping };

  class ConnectListener : public mqtt::iaction_listener {
   public:
    explicit ConnectListener(MqttConnection* owner) : owner_(owner) {}
    void on_success(const mqtt::token& token) override;
    void on_failure(const mqtt::token& token) override;

   private:
    MqttConnection* owner_;
  };

  void Loop();
  void BeginConnect();
  void OnConnectSucceeded(bool session_present, size_t receive_maximum);
  void OnConnectFailed(const std::string& reason);
  void OnConnectionLost(const std::string& cause);
  void Drop();
  absl::Status BuildOptions();

  const MqttSettings settings_;
  const std::string client_id_;
  const std::chrono::seconds session_expiry_;
  TransportMetrics& metrics_;
  const log::Logger& logger_;
  ConnectListener listener_{this};
  mqtt::connect_options options_;
  std::unique_ptr<mqtt::async_client> client_;
  Hooks hooks_;

  std::atomic<size_t> receive_maximum_{65'535};
  mutable absl::Mutex mu_;
  State state_ ABSL_GUARDED_BY(mu_) = State::kIdle;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool ever_connected_ ABSL_GUARDED_BY(mu_) = false;
  Backoff backoff_ ABSL_GUARDED_BY(mu_);
  std::chrono::steady_clock::time_point next_attempt_ ABSL_GUARDED_BY(mu_);
  std::string drop_reason_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace mmi::transport::internal
