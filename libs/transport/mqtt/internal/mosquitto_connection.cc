#include "libs/transport/mqtt/internal/mosquitto_connection.h"

#include <mosquitto.h>
#include <mqtt_protocol.h>
#include <openssl/ssl.h>
#include <poll.h>
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
#include "libs/common/status_macros.h"

namespace mmi::transport::internal {
namespace {

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

absl::Status Check(int rc, std::string_view what) {
  return rc == MOSQ_ERR_SUCCESS ? absl::OkStatus()
                                : absl::InvalidArgumentError(absl::StrCat(
                                      "transport.mqtt: ", std::string(what), ": ", ErrorText(rc)));
}

}  // namespace

MosquittoConnection::MosquittoConnection(const MqttSettings& settings, std::string client_id,
                                         TransportMetrics& metrics, const log::Logger& logger)
    : settings_(settings),
      logger_(logger),
      loop_(settings_, std::move(client_id), std::chrono::seconds(0), metrics, logger) {}

MosquittoConnection::~MosquittoConnection() {
  loop_.Stop();
  if (mosq_ != nullptr) {
    mosquitto_destroy(mosq_);
  }
}

absl::Status MosquittoConnection::NewHandle() {
  if (mosq_ != nullptr) {
    mosquitto_destroy(mosq_);
  }
  mosq_ = mosquitto_new(loop_.client_id().c_str(), /*clean_session=*/true, this);
  if (mosq_ == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot create an MQTT client: ", std::strerror(errno)));
  }
  RETURN_IF_ERROR(
      Check(mosquitto_int_option(mosq_, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V5), "MQTT 5"));
  // Small packets (PUBACKs, publishes) must not wait for Nagle: the peer sends no more until
  // they arrive.
  (void)mosquitto_int_option(mosq_, MOSQ_OPT_TCP_NODELAY, 1);
  (void)mosquitto_int_option(mosq_, MOSQ_OPT_RECEIVE_MAXIMUM, kReceiveMaximum);
  // libmosquitto's own limit of PUBLISHes awaiting their PUBACK defaults to 20 and is replaced
  // only by a Receive Maximum in the CONNACK; a broker that sends none means 65,535 (MQTT 5).
  (void)mosquitto_int_option(mosq_, MOSQ_OPT_SEND_MAXIMUM, kReceiveMaximum);
  if (!settings_.username.empty()) {
    RETURN_IF_ERROR(Check(mosquitto_username_pw_set(
                              mosq_, settings_.username.c_str(),
                              settings_.password.empty() ? nullptr : settings_.password.c_str()),
                          "username"));
  }
  RETURN_IF_ERROR(ConfigureTls());
  mosquitto_connect_v5_callback_set(mosq_, &MosquittoConnection::OnConnect);
  mosquitto_publish_v5_callback_set(mosq_, &MosquittoConnection::OnPublish);
  mosquitto_disconnect_v5_callback_set(mosq_, &MosquittoConnection::OnDisconnect);
  mosquitto_log_callback_set(mosq_, &MosquittoConnection::OnLog);
  return absl::OkStatus();
}

absl::Status MosquittoConnection::ConfigureTls() {
  const TlsSettings& tls = settings_.tls;
  if (!tls.enabled) {
    return absl::OkStatus();
  }
  const bool own_ca = !tls.ca_file.empty();
  if (!own_ca) {
    (void)mosquitto_int_option(mosq_, MOSQ_OPT_TLS_USE_OS_CERTS, 1);
  }
  if (own_ca || !tls.client_cert_file.empty()) {
    RETURN_IF_ERROR(
        Check(mosquitto_tls_set(
                  mosq_, own_ca ? tls.ca_file.c_str() : nullptr, own_ca ? nullptr : kSystemCaDir,
                  tls.client_cert_file.empty() ? nullptr : tls.client_cert_file.c_str(),
                  tls.client_key_file.empty() ? nullptr : tls.client_key_file.c_str(), nullptr),
              "tls"));
  }
  // Verify the server's certificate and its name (libmosquitto checks the host name unless told
  // it is insecure, which we never do).
  return Check(mosquitto_tls_opts_set(mosq_, /*SSL_VERIFY_PEER=*/1, nullptr, nullptr), "tls");
}

absl::Status MosquittoConnection::Start(Hooks hooks, const char* thread_name) {
  InitLibrary();
  RETURN_IF_ERROR(loop_.CheckSettings());
  // The first handle here, so that an option libmosquitto refuses fails Start().
  RETURN_IF_ERROR(NewHandle());
  hooks_ = std::move(hooks);
  return loop_.Start(
      thread_name, [this] { return Attempt(); }, &hooks_.on_lost, std::move(hooks_.on_tick));
}

std::string MosquittoConnection::Attempt() {
  if (mosq_ == nullptr) {
    if (absl::Status s = NewHandle(); !s.ok()) {
      return std::string(s.message());
    }
  }
  drop_reason_.clear();
  std::string reason = RunConnection();
  if (loop_.stopping() && loop_.accepted()) {
    // A clean DISCONNECT before we go.
    (void)mosquitto_disconnect_v5(mosq_, MQTT_RC_NORMAL_DISCONNECTION, nullptr);
    (void)mosquitto_loop_write(mosq_, 1);
  }
  mosquitto_destroy(mosq_);  // what it held (unacknowledged publishes) goes with it
  mosq_ = nullptr;
  return reason;
}

std::string MosquittoConnection::RunConnection() {
  if (std::string unreachable = Probe(); !unreachable.empty()) {
    return loop_.stopping() ? "" : unreachable;
  }
  server_disconnect_.clear();
  const int rc = mosquitto_connect_bind_v5(mosq_, loop_.host().c_str(), loop_.port(),
                                           loop_.keep_alive_s(), nullptr, nullptr);
  if (rc != MOSQ_ERR_SUCCESS) {
    return ErrorText(rc);
  }
  const auto connected_at = std::chrono::steady_clock::now();
  while (!loop_.stopping()) {
    const int turn = Turn();
    if (!drop_reason_.empty()) {
      break;
    }
    if (turn != MOSQ_ERR_SUCCESS) {
      return server_disconnect_.empty() ? ErrorText(turn) : server_disconnect_;
    }
    if (!loop_.accepted() &&
        std::chrono::steady_clock::now() - connected_at > settings_.dial_timeout) {
      return "no CONNACK within dialTimeout";
    }
  }
  if (drop_reason_.empty()) {
    return "";  // stopping: Attempt() says goodbye
  }
  (void)mosquitto_disconnect(mosq_);
  (void)mosquitto_loop_write(mosq_, 1);
  return drop_reason_;
}

std::string MosquittoConnection::Probe() {
  std::string error;
  const int fd = loop_.Dial(std::chrono::steady_clock::now() + settings_.dial_timeout, error);
  if (fd >= 0) {
    close(fd);
  }
  return fd >= 0 ? "" : error;
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
  const auto events = static_cast<short>(POLLIN | (mosquitto_want_write(mosq_) ? POLLOUT : 0));
  // Records TLS has decrypted already are not seen by poll(): read them without waiting.
  const bool tls_pending = TlsHoldsData();
  short revents = 0;
  if (loop_.Poll(sock, events, tls_pending ? 0 : PollTimeoutMs(loop_.next_tick()), revents) < 0 &&
      errno != EINTR) {
    return MOSQ_ERR_ERRNO;
  }
  if (tls_pending || (revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
    if (const int rc = ReadWaiting(); rc != MOSQ_ERR_SUCCESS) {
      return rc;
    }
  }
  if (hooks_.on_turn) {
    hooks_.on_turn();
  }
  if (mosquitto_socket(mosq_) >= 0 && mosquitto_want_write(mosq_)) {
    if (const int rc = mosquitto_loop_write(mosq_, 1); rc != MOSQ_ERR_SUCCESS) {
      return rc;
    }
  }
  // Keep-alive: PINGREQ, or the end of a silent connection.
  if (const int rc = mosquitto_loop_misc(mosq_); rc != MOSQ_ERR_SUCCESS) {
    return rc;
  }
  loop_.TickIfDue();
  return MOSQ_ERR_SUCCESS;
}

int MosquittoConnection::ReadWaiting() {
  // Every packet that is already here, not one per poll(): libmosquitto reads one (or those its
  // TLS layer holds) per call.
  for (int i = 0; i < kMaxReadsPerTurn; ++i) {
    const int rc = mosquitto_loop_read(mosq_, 1);
    if (rc != MOSQ_ERR_SUCCESS) {
      return rc;
    }
    if (!drop_reason_.empty() || mosquitto_socket(mosq_) < 0) {
      break;
    }
    int waiting = 0;
    if ((ioctl(mosquitto_socket(mosq_), FIONREAD, &waiting) != 0 || waiting <= 0) &&
        !TlsHoldsData()) {
      break;
    }
  }
  // A socket libmosquitto closed and called it a success: the broker sent DISCONNECT.
  return mosquitto_socket(mosq_) < 0 ? MOSQ_ERR_CONN_LOST : MOSQ_ERR_SUCCESS;
}

void MosquittoConnection::OnConnect(mosquitto* /*mosq*/, void* self_ptr, int reason, int flags,
                                    const mosquitto_property* props) {
  auto* self = static_cast<MosquittoConnection*>(self_ptr);
  if (reason != 0) {
    self->drop_reason_ =
        absl::StrCat("the broker refused the connection: ", mosquitto_reason_string(reason),
                     " (reason code ", reason, ")");
    return;
  }
  uint16_t receive_maximum = 65'535;  // MQTT 5: absent means 65,535
  (void)mosquitto_property_read_int16(props, MQTT_PROP_RECEIVE_MAXIMUM, &receive_maximum, false);
  const bool reconnect = self->loop_.Accepted(/*session_present=*/(flags & 0x01) != 0);
  if (self->hooks_.on_connected) {
    self->hooks_.on_connected(reconnect, std::max<std::size_t>(receive_maximum, 1));
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
