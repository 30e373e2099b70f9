#include "libs/transport/mqtt/internal/mosquitto_connection.h"

#include <mosquitto.h>
#include <mqtt_protocol.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "libs/transport/mqtt/internal/client_id.h"
#include "libs/transport/mqtt/internal/dial.h"
#include "libs/transport/mqtt/internal/tls_files.h"

namespace mmi::transport::internal {
namespace {

constexpr auto kTick = std::chrono::milliseconds(100);
// libmosquitto refuses a keep-alive below 5 s; 0 (off, which Paho allows) becomes the largest.
constexpr int kMinKeepAliveS = 5;
constexpr int kMaxKeepAliveS = 65'535;
// The Receive Maximum our CONNECT announces: no limit of our own (Paho sends none, which means
// the same); the broker's max_inflight_messages bounds what it has in flight to us.
constexpr int kReceiveMaximum = 65'535;
// Packets read in one turn while the socket has more bytes waiting (then the loop turns, so that
// a flood cannot starve the hooks).
constexpr int kMaxReadsPerTurn = 256;
// CA directory for `tls.caFile: ""` (the system roots) with a client certificate: libmosquitto
// takes a certificate only together with a CA file or directory.
constexpr const char* kSystemCaDir = "/etc/ssl/certs";

void InitLibrary() {
  static std::once_flag once;
  std::call_once(once, [] { mosquitto_lib_init(); });
}

// The text of a libmosquitto return code; MOSQ_ERR_ERRNO means "see errno".
std::string ErrorText(int rc) {
  if (rc == MOSQ_ERR_ERRNO) {
    return absl::StrCat("system error: ", std::strerror(errno));
  }
  if (rc == MOSQ_ERR_KEEPALIVE) {
    return "no PINGRESP within the keep-alive";
  }
  return mosquitto_strerror(rc);
}

}  // namespace

MosquittoConnection::MosquittoConnection(const MqttSettings& settings, std::string client_id,
                                         std::chrono::seconds session_expiry,
                                         TransportMetrics& metrics, const log::Logger& logger)
    : settings_(settings),
      client_id_(std::move(client_id)),
      session_expiry_(session_expiry),
      metrics_(metrics),
      logger_(logger),
      backoff_(settings.reconnect_backoff) {}

MosquittoConnection::~MosquittoConnection() {
  Stop();
  if (mosq_ != nullptr) {
    mosquitto_destroy(mosq_);
  }
  mosquitto_property_free_all(&connect_props_);
  if (wake_fd_ >= 0) {
    close(wake_fd_);
  }
}

absl::Status MosquittoConnection::CheckSettings() {
  if (absl::Status s = ParseBrokerAddress(settings_, host_, port_); !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckTlsFiles(settings_.tls); !s.ok()) {
    return s;
  }
  if (session_expiry_.count() > 0) {
    // Sent on every CONNECT: every attempt goes through mosquitto_connect_bind_v5(), since
    // libmosquitto's reconnect functions would drop the properties, and with them the session.
    const auto expiry =
        static_cast<uint32_t>(std::min<int64_t>(session_expiry_.count(), INT32_MAX));
    if (mosquitto_property_add_int32(&connect_props_, MQTT_PROP_SESSION_EXPIRY_INTERVAL, expiry) !=
        MOSQ_ERR_SUCCESS) {
      return absl::ResourceExhaustedError("transport.mqtt: cannot build the CONNECT properties");
    }
  }
  return absl::OkStatus();
}

absl::Status MosquittoConnection::NewHandle() {
  if (mosq_ != nullptr) {
    mosquitto_destroy(mosq_);
  }
  mosq_ = mosquitto_new(client_id_.c_str(), /*clean_session=*/session_expiry_.count() == 0, this);
  if (mosq_ == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot create an MQTT client: ", std::strerror(errno)));
  }
  auto check = [](int rc, std::string_view what) {
    return rc == MOSQ_ERR_SUCCESS
               ? absl::OkStatus()
               : absl::InvalidArgumentError(
                     absl::StrCat("transport.mqtt: ", std::string(what), ": ", ErrorText(rc)));
  };
  if (absl::Status s =
          check(mosquitto_int_option(mosq_, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V5), "MQTT 5");
      !s.ok()) {
    return s;
  }
  // Small packets (PUBACKs, publishes) must not wait for Nagle: the peer sends no more until
  // they arrive.
  (void)mosquitto_int_option(mosq_, MOSQ_OPT_TCP_NODELAY, 1);
  (void)mosquitto_int_option(mosq_, MOSQ_OPT_RECEIVE_MAXIMUM, kReceiveMaximum);
  // libmosquitto's own limit of PUBLISHes awaiting their PUBACK defaults to 20 and is replaced
  // only by a Receive Maximum in the CONNACK; a broker that sends none means 65,535 (MQTT 5).
  (void)mosquitto_int_option(mosq_, MOSQ_OPT_SEND_MAXIMUM, kReceiveMaximum);
  if (!settings_.username.empty()) {
    if (absl::Status s =
            check(mosquitto_username_pw_set(
                      mosq_, settings_.username.c_str(),
                      settings_.password.empty() ? nullptr : settings_.password.c_str()),
                  "username");
        !s.ok()) {
      return s;
    }
  }
  const TlsSettings& tls = settings_.tls;
  if (tls.enabled) {
    const bool own_ca = !tls.ca_file.empty();
    if (!own_ca) {
      (void)mosquitto_int_option(mosq_, MOSQ_OPT_TLS_USE_OS_CERTS, 1);
    }
    if (own_ca || !tls.client_cert_file.empty()) {
      if (absl::Status s = check(
              mosquitto_tls_set(
                  mosq_, own_ca ? tls.ca_file.c_str() : nullptr, own_ca ? nullptr : kSystemCaDir,
                  tls.client_cert_file.empty() ? nullptr : tls.client_cert_file.c_str(),
                  tls.client_key_file.empty() ? nullptr : tls.client_key_file.c_str(), nullptr),
              "tls");
          !s.ok()) {
        return s;
      }
    }
    // Verify the server's certificate and its name (libmosquitto checks the host name unless
    // told it is insecure, which we never do).
    if (absl::Status s =
            check(mosquitto_tls_opts_set(mosq_, /*SSL_VERIFY_PEER=*/1, nullptr, nullptr), "tls");
        !s.ok()) {
      return s;
    }
  }
  mosquitto_connect_v5_callback_set(mosq_, &MosquittoConnection::OnConnect);
  mosquitto_subscribe_v5_callback_set(mosq_, &MosquittoConnection::OnSubscribe);
  mosquitto_message_v5_callback_set(mosq_, &MosquittoConnection::OnMessage);
  mosquitto_publish_v5_callback_set(mosq_, &MosquittoConnection::OnPublish);
  mosquitto_disconnect_v5_callback_set(mosq_, &MosquittoConnection::OnDisconnect);
  mosquitto_log_callback_set(mosq_, &MosquittoConnection::OnLog);
  return absl::OkStatus();
}

absl::Status MosquittoConnection::Start(Hooks hooks, const char* thread_name) {
  InitLibrary();
  if (absl::Status s = CheckSettings(); !s.ok()) {
    return s;
  }
  // The first handle here, so that an option libmosquitto refuses fails Start().
  if (absl::Status s = NewHandle(); !s.ok()) {
    return s;
  }
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot create an eventfd: ", std::strerror(errno)));
  }
  hooks_ = std::move(hooks);
  metrics_.SetConnected(false);
  thread_ = std::thread([this] { Run(); });
  pthread_setname_np(thread_.native_handle(), thread_name);
  return absl::OkStatus();
}

void MosquittoConnection::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) {
      return;
    }
    stopping_ = true;
  }
  Wake();
  if (thread_.joinable()) {
    thread_.join();
  }
  connected_.store(false);
  metrics_.SetConnected(false);
}

bool MosquittoConnection::stopping() const {
  absl::MutexLock lock(&mu_);
  return stopping_;
}

void MosquittoConnection::Wake() {
  if (wake_fd_ >= 0) {
    const uint64_t one = 1;
    (void)!write(wake_fd_, &one, sizeof(one));
  }
}

void MosquittoConnection::Drop(std::string reason) {
  if (drop_reason_.empty()) {
    drop_reason_ = std::move(reason);
  }
}

void MosquittoConnection::Run() {
  bool first = true;
  while (!stopping()) {
    if (!first) {
      if (absl::Status s = NewHandle(); !s.ok()) {
        WaitToRetry(std::string(s.message()), false);
        continue;
      }
    }
    first = false;
    accepted_ = false;
    drop_reason_.clear();
    const std::string reason = RunConnection();
    const bool was_connected = accepted_;
    if (was_connected) {
      connected_.store(false);
      metrics_.SetConnected(false);
    }
    if (stopping()) {
      break;
    }
    mosquitto_destroy(mosq_);  // what it held (unacknowledged publishes) goes with it
    mosq_ = nullptr;
    accepted_ = false;
    if (was_connected && hooks_.on_lost) {
      hooks_.on_lost();
    }
    WaitToRetry(reason, was_connected);
  }
  if (mosq_ != nullptr && accepted_) {
    // A clean DISCONNECT: with a persistent session the broker keeps it for the next leader.
    (void)mosquitto_disconnect_v5(mosq_, MQTT_RC_NORMAL_DISCONNECTION, nullptr);
    (void)mosquitto_loop_write(mosq_, 1);
  }
  if (accepted_ && hooks_.on_lost) {
    hooks_.on_lost();
  }
}

std::string MosquittoConnection::RunConnection() {
  logger_.Debug("connecting", {{"broker", settings_.broker_host}, {"client_id", client_id_}});
  const int keep_alive = settings_.keep_alive.count() == 0
                             ? kMaxKeepAliveS
                             : std::clamp<int>(static_cast<int>(settings_.keep_alive.count()),
                                               kMinKeepAliveS, kMaxKeepAliveS);
  if (std::string unreachable = Probe(); !unreachable.empty()) {
    return stopping() ? "" : unreachable;
  }
  server_disconnect_.clear();
  const int rc =
      mosquitto_connect_bind_v5(mosq_, host_.c_str(), port_, keep_alive, nullptr, connect_props_);
  if (rc != MOSQ_ERR_SUCCESS) {
    return ErrorText(rc);
  }
  const auto connected_at = std::chrono::steady_clock::now();
  next_tick_ = connected_at + kTick;
  while (!stopping()) {
    const int turn = Turn();
    if (!drop_reason_.empty()) {
      break;
    }
    if (turn != MOSQ_ERR_SUCCESS) {
      return server_disconnect_.empty() ? ErrorText(turn) : server_disconnect_;
    }
    if (!accepted_ && std::chrono::steady_clock::now() - connected_at > settings_.dial_timeout) {
      return "no CONNACK within dialTimeout";
    }
  }
  if (drop_reason_.empty()) {
    return "";  // stopping: Run() says goodbye
  }
  (void)mosquitto_disconnect(mosq_);
  (void)mosquitto_loop_write(mosq_, 1);
  return drop_reason_;
}

std::string MosquittoConnection::Probe() {
  const DialResult dialed = Dial(
      host_, port_, std::chrono::steady_clock::now() + settings_.dial_timeout, wake_fd_, kTick,
      [this] { return stopping(); },
      [this] {
        if (hooks_.on_tick) {
          hooks_.on_tick();
        }
      });
  if (dialed.fd >= 0) {
    close(dialed.fd);
  }
  return dialed.error;
}

bool MosquittoConnection::TlsHoldsData() {
  auto* ssl = static_cast<SSL*>(mosquitto_ssl_get(mosq_));
  return ssl != nullptr && SSL_pending(ssl) > 0;
}

int MosquittoConnection::Turn() {
  const int sock = mosquitto_socket(mosq_);
  if (sock < 0) {
    return MOSQ_ERR_NO_CONN;
  }
  pollfd fds[2] = {
      {sock, static_cast<short>(POLLIN | (mosquitto_want_write(mosq_) ? POLLOUT : 0)), 0},
      {wake_fd_, POLLIN, 0}};
  const auto now = std::chrono::steady_clock::now();
  // Records TLS has decrypted already are not seen by poll(): read them without waiting.
  const bool tls_pending = TlsHoldsData();
  const int timeout_ms =
      tls_pending
          ? 0
          : static_cast<int>(std::clamp<int64_t>(
                std::chrono::duration_cast<std::chrono::milliseconds>(next_tick_ - now).count(), 0,
                kTick.count()));
  if (poll(fds, 2, timeout_ms) < 0 && errno != EINTR) {
    return MOSQ_ERR_ERRNO;
  }
  if ((fds[1].revents & POLLIN) != 0) {
    uint64_t count = 0;
    (void)!read(wake_fd_, &count, sizeof(count));
  }
  int rc = MOSQ_ERR_SUCCESS;
  if (tls_pending || (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
    // Every packet that is already here, not one per poll(): libmosquitto reads one (or those
    // its TLS layer holds) per call.
    for (int i = 0; i < kMaxReadsPerTurn; ++i) {
      rc = mosquitto_loop_read(mosq_, 1);
      if (rc != MOSQ_ERR_SUCCESS || !drop_reason_.empty() || mosquitto_socket(mosq_) < 0) {
        break;
      }
      int waiting = 0;
      if ((ioctl(mosquitto_socket(mosq_), FIONREAD, &waiting) != 0 || waiting <= 0) &&
          !TlsHoldsData()) {
        break;
      }
    }
    if (rc != MOSQ_ERR_SUCCESS) {
      return rc;
    }
    if (mosquitto_socket(mosq_) < 0) {
      // libmosquitto closed it and called it a success: the broker sent DISCONNECT.
      return MOSQ_ERR_CONN_LOST;
    }
  }
  if (hooks_.on_turn) {
    hooks_.on_turn();
  }
  if (mosquitto_socket(mosq_) >= 0 && mosquitto_want_write(mosq_)) {
    rc = mosquitto_loop_write(mosq_, 1);
    if (rc != MOSQ_ERR_SUCCESS) {
      return rc;
    }
  }
  rc = mosquitto_loop_misc(mosq_);  // keep-alive: PINGREQ, or the end of a silent connection
  if (rc != MOSQ_ERR_SUCCESS) {
    return rc;
  }
  if (std::chrono::steady_clock::now() >= next_tick_) {
    next_tick_ = std::chrono::steady_clock::now() + kTick;
    if (hooks_.on_tick) {
      hooks_.on_tick();
    }
  }
  return MOSQ_ERR_SUCCESS;
}

void MosquittoConnection::WaitToRetry(std::string_view reason, bool was_connected) {
  const std::chrono::milliseconds delay = backoff_.Next();
  LogRetry(logger_, settings_, client_id_, reason, was_connected, backoff_.attempts(), delay);
  // The owner's tick goes on while no connection stands (a publisher fails what waits).
  WaitUnlessStopping(mu_, &stopping_, delay, kTick, [this] {
    if (hooks_.on_tick) {
      hooks_.on_tick();
    }
  });
}

void MosquittoConnection::OnConnect(mosquitto* /*mosq*/, void* self_ptr, int reason, int flags,
                                    const mosquitto_property* props) {
  auto* self = static_cast<MosquittoConnection*>(self_ptr);
  if (reason != 0) {
    self->Drop(absl::StrCat("the broker refused the connection: ", mosquitto_reason_string(reason),
                            " (reason code ", reason, ")"));
    return;
  }
  uint16_t receive_maximum = 65'535;  // MQTT 5: absent means 65,535
  (void)mosquitto_property_read_int16(props, MQTT_PROP_RECEIVE_MAXIMUM, &receive_maximum, false);
  const bool session_present = (flags & 0x01) != 0;
  const bool reconnect = self->ever_connected_;
  self->ever_connected_ = true;
  self->accepted_ = true;
  self->backoff_.Reset();
  self->connected_.store(true);
  self->metrics_.SetConnected(true);
  if (reconnect) {
    self->metrics_.RecordReconnect();
  }
  LogConnected(self->logger_, self->settings_, self->client_id_, self->session_expiry_,
               session_present);
  if (self->hooks_.on_connected) {
    self->hooks_.on_connected(reconnect, std::max<std::size_t>(receive_maximum, 1));
  }
}

void MosquittoConnection::OnSubscribe(mosquitto* /*mosq*/, void* self_ptr, int mid, int count,
                                      const int* granted, const mosquitto_property* /*props*/) {
  auto* self = static_cast<MosquittoConnection*>(self_ptr);
  if (self->hooks_.on_subscribe) {
    self->hooks_.on_subscribe(mid, absl::MakeConstSpan(granted, static_cast<std::size_t>(count)));
  }
}

void MosquittoConnection::OnMessage(mosquitto* /*mosq*/, void* self_ptr,
                                    const mosquitto_message* message,
                                    const mosquitto_property* props) {
  auto* self = static_cast<MosquittoConnection*>(self_ptr);
  if (message != nullptr && self->hooks_.on_message) {
    self->hooks_.on_message(*message, props);
  }
}

void MosquittoConnection::OnPublish(mosquitto* /*mosq*/, void* self_ptr, int mid, int reason_code,
                                    const mosquitto_property* /*props*/) {
  auto* self = static_cast<MosquittoConnection*>(self_ptr);
  if (self->hooks_.on_publish) {
    self->hooks_.on_publish(mid, reason_code);
  }
}

void MosquittoConnection::OnDisconnect(mosquitto* /*mosq*/, void* self_ptr, int reason,
                                       const mosquitto_property* /*props*/) {
  // A broker's DISCONNECT carries an MQTT reason code (>= 0x80 when it is an error); a lost
  // connection, libmosquitto's own error code.
  auto* self = static_cast<MosquittoConnection*>(self_ptr);
  if (reason >= 0x80) {
    self->server_disconnect_ =
        absl::StrCat("the broker sent DISCONNECT: ", mosquitto_reason_string(reason),
                     " (reason code ", reason, ")");
  }
}

void MosquittoConnection::OnLog(mosquitto* /*mosq*/, void* self_ptr, int level, const char* text) {
  // libmosquitto reports TLS failures (certificate, handshake) only here. Each connection attempt
  // logs at most a few lines, and attempts are spaced by the backoff.
  auto* self = static_cast<MosquittoConnection*>(self_ptr);
  if ((level & (MOSQ_LOG_ERR | MOSQ_LOG_WARNING)) != 0 && text != nullptr) {
    self->logger_.Warn("libmosquitto", {{"detail", std::string(text)}});
  }
}

}  // namespace mmi::transport::internal
