#include "libs/transport/mqtt/internal/mqtt_connection.h"

#include <pthread.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "libs/transport/mqtt/internal/client_id.h"
#include "libs/transport/mqtt/internal/tls_files.h"

namespace mmi::transport::internal {
namespace {

constexpr auto kTick = std::chrono::milliseconds(100);

}  // namespace

void MqttConnection::ConnectListener::on_success(const mqtt::token& token) {
  bool session_present = false;
  size_t receive_maximum = 65'535;  // MQTT 5: absent means 65,535
  try {
    const mqtt::connect_response response = token.get_connect_response();
    session_present = response.is_session_present();
    const mqtt::properties& props = response.get_properties();
    if (props.contains(mqtt::property::RECEIVE_MAXIMUM)) {
      receive_maximum = mqtt::get<uint16_t>(props, mqtt::property::RECEIVE_MAXIMUM);
    }
  } catch (const std::exception&) {
    // Not a connect token: cannot happen for this listener; treat as a new session.
  }
  owner_->OnConnectSucceeded(session_present, receive_maximum);
}

void MqttConnection::ConnectListener::on_failure(const mqtt::token& token) {
  owner_->OnConnectFailed(absl::StrCat("return code ", token.get_return_code(), ", reason code ",
                                       static_cast<int>(token.get_reason_code())));
}

MqttConnection::MqttConnection(const MqttSettings& settings, std::string client_id,
                               TransportMetrics& metrics, const log::Logger& logger,
                               std::chrono::seconds session_expiry)
    : settings_(settings),
      client_id_(std::move(client_id)),
      session_expiry_(session_expiry),
      metrics_(metrics),
      logger_(logger),
      backoff_(settings.reconnect_backoff) {}

MqttConnection::~MqttConnection() { Stop(std::chrono::milliseconds(0)); }

absl::Status MqttConnection::BuildOptions() {
  auto builder = mqtt::connect_options_builder()
                     .mqtt_version(MQTTVERSION_5)
                     .clean_start(session_expiry_.count() == 0)
                     .keep_alive_interval(settings_.keep_alive)
                     .connect_timeout(std::chrono::duration_cast<std::chrono::seconds>(
                         std::max(settings_.dial_timeout, std::chrono::milliseconds(1'000))))
                     .automatic_reconnect(false);
  if (!settings_.username.empty()) {
    builder.user_name(settings_.username);
    builder.password(settings_.password);
  }
  if (settings_.tls.enabled) {
    if (absl::Status s = CheckTlsFiles(settings_.tls); !s.ok()) {
      return s;
    }
    mqtt::ssl_options_builder ssl;
    if (!settings_.tls.ca_file.empty()) {
      ssl.trust_store(settings_.tls.ca_file);
    }
    if (!settings_.tls.client_cert_file.empty()) {
      ssl.key_store(settings_.tls.client_cert_file);
      ssl.private_key(settings_.tls.client_key_file);
    }
    ssl.enable_server_cert_auth(true);
    ssl.verify(true);
    const log::Logger* logger = &logger_;
    ssl.error_handler([logger](const std::string& message) {
      logger->Warn("MQTT TLS error", {{"error", message}});
    });
    builder.ssl(ssl.finalize());
  }
  options_ = builder.finalize();
  if (session_expiry_.count() > 0) {
    // Set on the final object: in Paho C++ 1.2.0 the options copied out of the builder keep a
    // pointer to the builder's properties, dangling once the builder is gone (no session was
    // kept; a reconnect read freed memory and crashed).
    options_.set_properties(mqtt::properties{
        {mqtt::property::SESSION_EXPIRY_INTERVAL,
         static_cast<int32_t>(std::min<int64_t>(session_expiry_.count(), INT32_MAX))}});
  }
  return absl::OkStatus();
}

absl::Status MqttConnection::Start(Hooks hooks) {
  if (absl::Status s = BuildOptions(); !s.ok()) {
    return s;
  }
  const std::string uri =
      absl::StrCat(settings_.tls.enabled ? "ssl://" : "tcp://", settings_.broker_host);
  try {
    // No persistence and no offline buffering: Clean Start loses the session anyway (§3.1), and
    // a publish while disconnected must fail fast so that the caller retries.
    // Paho refuses new publishes (MQTTASYNC_MAX_BUFFERED_MESSAGES) once this many are pending,
    // connected or not. MqttPublisher caps itself at the same number (kResourceExhausted) and
    // hands Paho no more than the broker's Receive Maximum at once, so this is a backstop.
    client_ = std::make_unique<mqtt::async_client>(
        uri, client_id_, mqtt::create_options(MQTTVERSION_5, kMaxPendingPublishes), nullptr);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("transport.mqtt.brokerHost: cannot create an "
                     "MQTT client for ",
                     uri, ": ", e.what()));
  }
  hooks_ = std::move(hooks);
  client_->set_connection_lost_handler(
      [this](const std::string& cause) { OnConnectionLost(cause); });
  client_->set_disconnected_handler([this](const mqtt::properties&, mqtt::ReasonCode reason) {
    OnConnectionLost(
        absl::StrCat("server sent DISCONNECT, reason code ", static_cast<int>(reason)));
  });
  if (hooks_.on_message) {
    client_->set_message_callback(
        [this](mqtt::const_message_ptr message) { hooks_.on_message(std::move(message)); });
  }
  {
    absl::MutexLock lock(&mu_);
    state_ = State::kDisconnected;
    next_attempt_ = std::chrono::steady_clock::now();
  }
  metrics_.SetConnected(false);
  thread_ = std::thread([this] { Loop(); });
  pthread_setname_np(thread_.native_handle(), "mqtt-conn");
  return absl::OkStatus();
}

void MqttConnection::Stop(std::chrono::milliseconds timeout) {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) {
      return;
    }
    stopping_ = true;
  }
  if (thread_.joinable()) {
    thread_.join();
  }
  if (client_ != nullptr) {
    // Paho throws when there is nothing to disconnect (never connected, connect pending): both
    // are fine here, and destroying the client cancels whatever is pending.
    try {
      client_->disconnect(timeout)->wait_for(timeout + std::chrono::milliseconds(500));
    } catch (const std::exception& e) {
      logger_.Debug("MQTT disconnect did not complete", {{"error", e.what()}});
    }
    try {
      client_->disable_callbacks();
    } catch (const std::exception& e) {
      logger_.Debug("MQTT callbacks could not be disabled", {{"error", e.what()}});
    }
    client_.reset();
  }
  metrics_.SetConnected(false);
}

bool MqttConnection::connected() const {
  absl::MutexLock lock(&mu_);
  return state_ == State::kConnected || state_ == State::kJustConnected;
}

void MqttConnection::ForceReconnect(std::string_view reason) {
  absl::MutexLock lock(&mu_);
  if (stopping_ || (state_ != State::kConnected && state_ != State::kJustConnected)) {
    return;
  }
  state_ = State::kDropping;
  drop_reason_ = std::string(reason);
}

void MqttConnection::Loop() {
  while (true) {
    bool run_connected_hook = false;
    bool reconnect = false;
    bool connect_now = false;
    bool drop_now = false;
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) {
        return;
      }
      const auto now = std::chrono::steady_clock::now();
      if (state_ == State::kDisconnected && now >= next_attempt_) {
        state_ = State::kConnecting;
        connect_now = true;
      } else if (state_ == State::kJustConnected) {
        state_ = State::kConnected;
        reconnect = ever_connected_;
        ever_connected_ = true;
        run_connected_hook = true;
      } else if (state_ == State::kDropping) {
        drop_now = true;
      }
    }
    if (connect_now) {
      BeginConnect();
      continue;
    }
    if (drop_now) {
      Drop();
      continue;
    }
    if (run_connected_hook) {
      if (reconnect) {
        metrics_.RecordReconnect();
      }
      if (hooks_.on_connected) {
        hooks_.on_connected(reconnect);
      }
      continue;
    }
    if (hooks_.on_tick) {
      hooks_.on_tick();
    }
    absl::MutexLock lock(&mu_);
    auto wake = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return stopping_ || state_ == State::kJustConnected || state_ == State::kDropping ||
             (state_ == State::kDisconnected && std::chrono::steady_clock::now() >= next_attempt_);
    };
    mu_.AwaitWithTimeout(absl::Condition(&wake), absl::FromChrono(kTick));
  }
}

void MqttConnection::BeginConnect() {
  logger_.Debug("connecting", {{"broker", settings_.broker_host}, {"client_id", client_id_}});
  try {
    client_->connect(options_, nullptr, listener_);
  } catch (const std::exception& e) {
    OnConnectFailed(e.what());
  }
}

void MqttConnection::OnConnectSucceeded(bool session_present, size_t receive_maximum) {
  receive_maximum_.store(std::max<size_t>(receive_maximum, 1));
  {
    absl::MutexLock lock(&mu_);
    if (stopping_ || state_ != State::kConnecting) {
      return;
    }
    state_ = State::kJustConnected;
    backoff_.Reset();
  }
  metrics_.SetConnected(true);
  LogConnected(logger_, settings_, client_id_, session_expiry_, session_present);
}

void MqttConnection::OnConnectFailed(const std::string& reason) {
  std::chrono::milliseconds delay{0};
  int attempt = 0;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_ || state_ != State::kConnecting) {
      return;
    }
    delay = backoff_.Next();
    attempt = backoff_.attempts();
    state_ = State::kDisconnected;
    next_attempt_ = std::chrono::steady_clock::now() + delay;
  }
  logger_.Warn("MQTT connect failed; retrying",
               {{"broker", settings_.broker_host},
                {"error", reason},
                {"attempt", attempt},
                {"retry_in_ms", static_cast<int64_t>(delay.count())}});
}

void MqttConnection::OnConnectionLost(const std::string& cause) {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_ || (state_ != State::kConnected && state_ != State::kJustConnected &&
                      state_ != State::kDropping)) {
      return;
    }
    state_ = State::kDisconnected;
    next_attempt_ = std::chrono::steady_clock::now() + backoff_.Next();
  }
  metrics_.SetConnected(false);
  logger_.Warn("MQTT connection lost; reconnecting",
               {{"broker", settings_.broker_host}, {"cause", cause}});
  if (hooks_.on_lost) {
    hooks_.on_lost();
  }
}

void MqttConnection::Drop() {
  std::string reason;
  {
    absl::MutexLock lock(&mu_);
    reason = drop_reason_;
  }
  logger_.Warn("dropping the MQTT connection", {{"reason", reason}});
  try {
    client_->disconnect(std::chrono::milliseconds(0))->wait_for(std::chrono::seconds(2));
  } catch (const std::exception& e) {
    logger_.Info("MQTT disconnect failed", {{"error", e.what()}});
  }
  // An explicit disconnect does not invoke the connection-lost handler.
  {
    absl::MutexLock lock(&mu_);
    if (state_ == State::kDropping) {
      state_ = State::kConnected;  // lets OnConnectionLost() run its transition
    }
  }
  OnConnectionLost(reason);
}

}  // namespace mmi::transport::internal
