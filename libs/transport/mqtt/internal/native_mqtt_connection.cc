#include "libs/transport/mqtt/internal/native_mqtt_connection.h"

#include <arpa/inet.h>
#include <mosquitto.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "libs/common/status_macros.h"

namespace mmi::transport::internal {
namespace {

using Clock = std::chrono::steady_clock;

// The input buffer: one read takes up to this much of what is waiting.
constexpr std::size_t kInputBytes = 256 * 1024;
// Bytes read in one turn before the loop turns again (so that a flood cannot starve the tick).
constexpr std::size_t kMaxReadPerTurn = 4 * 1024 * 1024;
// The largest packet taken: MQTT's own bound, as libmosquitto's. A PUBLISH above the event limit
// is read whole, rejected as oversize by the subscriber's intake and acknowledged, so that it
// cannot block a persistent session (refusing it would make the broker send it again forever).
constexpr std::size_t kMaxPacketBytes = mqtt5::kMaxRemainingLength + 5;
constexpr auto kGoodbyeTimeout = std::chrono::milliseconds(1'000);

// The reasons OpenSSL queued, oldest first; clears its queue.
std::string OpenSslErrors() {
  std::string text;
  while (const unsigned long code = ERR_get_error()) {
    char buffer[256];
    ERR_error_string_n(code, buffer, sizeof(buffer));
    absl::StrAppend(&text, text.empty() ? "" : "; ", buffer);
  }
  return text.empty() ? "unknown TLS error" : text;
}

// "reason code 135 (Not authorized)" and the broker's Reason String when it sent one.
std::string DescribeReason(uint8_t code, std::string_view reason_string) {
  std::string text = absl::StrCat(mosquitto_reason_string(code), " (reason code ", code, ")");
  if (!reason_string.empty()) {
    absl::StrAppend(&text, ": ", std::string(reason_string));
  }
  return text;
}

}  // namespace

void TlsContextFree::operator()(ssl_ctx_st* context) const { SSL_CTX_free(context); }

// The connected socket, plain TCP or TLS over it. Non-blocking: Read() and Write() say when they
// would block, and write_waits_for() / read_waits_for() what for (TLS may need to write to read,
// or to read to write).
class NativeMqttConnection::Channel {
 public:
  enum class Io { kProgress, kWouldBlock, kClosed, kError };

  Channel(int fd, SSL* ssl) : fd_(fd), ssl_(ssl) {}
  ~Channel() {
    SSL_free(ssl_);  // a no-op for nullptr
    close(fd_);
  }
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;

  int fd() const { return fd_; }
  // The poll() events a blocked write waits for (POLLOUT, or POLLIN when TLS must read first).
  short write_waits_for() const { return write_waits_for_; }
  // Extra poll() events a blocked read waits for (POLLOUT when TLS must write first).
  short read_waits_for() const { return read_waits_for_; }

  Io Read(char* data, std::size_t size, std::size_t& done, std::string& error) {
    read_waits_for_ = 0;
    ClearErrors();
    const long n = ssl_ == nullptr ? recv(fd_, data, size, MSG_DONTWAIT)
                                   : SSL_read(ssl_, data, TlsLength(size));
    return Outcome(n, 0, done, error);
  }

  Io Write(const char* data, std::size_t size, std::size_t& done, std::string& error) {
    write_waits_for_ = POLLOUT;
    ClearErrors();
    const long n = ssl_ == nullptr ? send(fd_, data, size, MSG_DONTWAIT | MSG_NOSIGNAL)
                                   : SSL_write(ssl_, data, TlsLength(size));
    return Outcome(n, POLLOUT, done, error);
  }

  // TLS records already decrypted and not read yet: poll() cannot see them. (With read-ahead,
  // OpenSSL may also hold part of a record; a read that ended with WANT_READ consumed every whole
  // one, and the rest waits for the socket, which poll() sees.)
  bool HoldsData() const { return ssl_ != nullptr && SSL_pending(ssl_) > 0; }

  // A TLS close_notify, best effort.
  void Shutdown() {
    if (ssl_ != nullptr) {
      ERR_clear_error();
      (void)SSL_shutdown(ssl_);
    }
  }

 private:
  static void ClearErrors() {
    ERR_clear_error();
    errno = 0;
  }
  static int TlsLength(std::size_t size) {
    return static_cast<int>(std::min<std::size_t>(size, INT32_MAX));
  }

  // What a recv()/send() or SSL_read()/SSL_write() that returned `n` did. `writing` is POLLOUT
  // for a write, 0 for a read. A plain read of 0 bytes is the end of the stream.
  Io Outcome(long n, short writing, std::size_t& done, std::string& error) {
    if (n > 0 || (n == 0 && ssl_ == nullptr && writing != 0)) {
      done = static_cast<std::size_t>(n);
      return Io::kProgress;
    }
    if (ssl_ == nullptr) {
      return n == 0 ? Io::kClosed : SocketFailure(error);
    }
    return TlsFailure(static_cast<int>(n), writing != 0 ? write_waits_for_ : read_waits_for_,
                      writing, error);
  }

  static Io SocketFailure(std::string& error) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
      return Io::kWouldBlock;
    }
    error = std::strerror(errno);
    return Io::kError;
  }

  // `waits_for` is set to what a blocked call waits for: POLLIN or POLLOUT as OpenSSL asks, where
  // `writing` is what the call itself would wait for.
  Io TlsFailure(int rc, short& waits_for, short writing, std::string& error) {
    switch (SSL_get_error(ssl_, rc)) {
      case SSL_ERROR_WANT_READ:
        waits_for = writing == 0 ? 0 : POLLIN;  // a read waits for POLLIN anyway
        return Io::kWouldBlock;
      case SSL_ERROR_WANT_WRITE:
        waits_for = POLLOUT;
        return Io::kWouldBlock;
      case SSL_ERROR_ZERO_RETURN:
        return Io::kClosed;
      case SSL_ERROR_SYSCALL:
        if (ERR_peek_error() == 0) {
          if (errno == 0) {
            return Io::kClosed;  // an end without close_notify
          }
          error = std::strerror(errno);
          return Io::kError;
        }
        break;
      case SSL_ERROR_SSL:
        if (ERR_GET_REASON(ERR_peek_error()) == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
          ERR_clear_error();
          return Io::kClosed;  // OpenSSL 3's name for an end without close_notify
        }
        break;
      default:
        break;
    }
    error = OpenSslErrors();
    return Io::kError;
  }

  const int fd_;
  SSL* const ssl_;
  short write_waits_for_ = POLLOUT;
  short read_waits_for_ = 0;
};

NativeMqttConnection::NativeMqttConnection(const MqttSettings& settings, std::string client_id,
                                           std::chrono::seconds session_expiry,
                                           TransportMetrics& metrics, const log::Logger& logger)
    : settings_(settings),
      loop_(settings_, std::move(client_id), session_expiry, metrics, logger) {}

NativeMqttConnection::~NativeMqttConnection() { loop_.Stop(); }

absl::Status NativeMqttConnection::Start(Hooks hooks, const char* thread_name) {
  RETURN_IF_ERROR(loop_.ParseBrokerHost());
  if (settings_.tls.enabled) {
    RETURN_IF_ERROR(NewTlsContext());
  }
  hooks_ = std::move(hooks);
  return loop_.Start(
      thread_name, [this] { return Attempt(); }, &hooks_.on_lost, std::move(hooks_.on_tick));
}

absl::Status NativeMqttConnection::NewTlsContext() {
  const TlsSettings& tls = settings_.tls;
  tls_context_.reset(SSL_CTX_new(TLS_client_method()));
  if (tls_context_ == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("transport.mqtt.tls: cannot create a TLS context: ", OpenSslErrors()));
  }
  SSL_CTX* context = tls_context_.get();
  SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION);
  SSL_CTX_set_options(context, SSL_OP_NO_RENEGOTIATION);
  // Read as much of what is waiting as fits, not one record header and body at a time.
  SSL_CTX_set_read_ahead(context, 1);
  SSL_CTX_set_default_read_buffer_len(context, kInputBytes);
  SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nullptr);
  SSL_CTX_set_mode(context, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  const bool roots = tls.ca_file.empty() ? SSL_CTX_set_default_verify_paths(context) == 1
                                         : SSL_CTX_load_verify_locations(
                                               context, tls.ca_file.c_str(), nullptr) == 1;
  if (!roots) {
    return absl::FailedPreconditionError(absl::StrCat(
        "transport.mqtt.tls.caFile: cannot load the CA certificates: ", OpenSslErrors()));
  }
  if (tls.client_cert_file.empty()) {
    return absl::OkStatus();
  }
  if (SSL_CTX_use_certificate_chain_file(context, tls.client_cert_file.c_str()) != 1) {
    return absl::FailedPreconditionError(
        absl::StrCat("transport.mqtt.tls.clientCertFile: cannot load \"", tls.client_cert_file,
                     "\": ", OpenSslErrors()));
  }
  if (SSL_CTX_use_PrivateKey_file(context, tls.client_key_file.c_str(), SSL_FILETYPE_PEM) != 1 ||
      SSL_CTX_check_private_key(context) != 1) {
    return absl::FailedPreconditionError(
        absl::StrCat("transport.mqtt.tls.clientKeyFile: cannot load \"", tls.client_key_file,
                     "\" for the client certificate: ", OpenSslErrors()));
  }
  return absl::OkStatus();
}

uint16_t NativeMqttConnection::NextPacketId() {
  last_packet_id_ = static_cast<uint16_t>(last_packet_id_ == 65'535 ? 1 : last_packet_id_ + 1);
  return last_packet_id_;
}

void NativeMqttConnection::Drop(std::string reason, uint8_t reason_code) {
  if (drop_reason_.empty()) {
    drop_reason_ = std::move(reason);
    drop_code_ = reason_code;
  }
}

std::string NativeMqttConnection::EndCause(bool closed, const char* io,
                                           const std::string& error) const {
  if (!drop_reason_.empty()) {
    return drop_reason_;
  }
  return closed ? "the broker closed the connection" : absl::StrCat(io, ": ", error);
}

std::string NativeMqttConnection::Attempt() {
  peer_disconnected_ = false;
  drop_reason_.clear();
  const Clock::time_point deadline = Clock::now() + settings_.dial_timeout;
  std::string ended = Open(deadline);
  if (channel_ != nullptr && ended.empty() && !loop_.stopping()) {
    SendConnect();
    while (ended.empty() && drop_reason_.empty() && !loop_.stopping()) {
      ended = Turn(deadline);
    }
    if (ended.empty()) {
      Goodbye();
      ended = drop_reason_;
    }
  }
  channel_.reset();
  return loop_.stopping() ? "" : ended;
}

std::string NativeMqttConnection::Open(Clock::time_point deadline) {
  std::string error;
  const int fd = loop_.Dial(deadline, error);
  if (fd < 0) {
    return error;
  }
  const int one = 1;
  (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  SSL* ssl = nullptr;
  if (tls_context_ != nullptr) {
    ssl = SSL_new(tls_context_.get());
    if (ssl == nullptr) {
      close(fd);
      return absl::StrCat("cannot start TLS: ", OpenSslErrors());
    }
  }
  channel_ = std::make_unique<Channel>(fd, ssl);
  return ssl == nullptr ? "" : Handshake(ssl, fd, deadline);
}

std::string NativeMqttConnection::Handshake(ssl_st* ssl, int fd, Clock::time_point deadline) {
  SSL_set_fd(ssl, fd);
  // The server's certificate must name the host we dialled (an IP address or a DNS name).
  const char* host = loop_.host().c_str();
  if (in6_addr address{};
      inet_pton(AF_INET, host, &address) == 1 || inet_pton(AF_INET6, host, &address) == 1) {
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host);
  } else {
    SSL_set_tlsext_host_name(ssl, host);
    SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    SSL_set1_host(ssl, host);
  }
  while (true) {
    ERR_clear_error();
    const int rc = SSL_connect(ssl);
    if (rc == 1) {
      return "";
    }
    const int error = SSL_get_error(ssl, rc);
    if (error != SSL_ERROR_WANT_READ && error != SSL_ERROR_WANT_WRITE) {
      const long verify = SSL_get_verify_result(ssl);
      return absl::StrCat("TLS handshake failed: ",
                          verify != X509_V_OK ? absl::StrCat("the broker's certificate: ",
                                                             X509_verify_cert_error_string(verify))
                                              : OpenSslErrors());
    }
    if (loop_.stopping()) {
      return "";
    }
    if (!loop_.WaitFor(fd, error == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline)) {
      return "TLS handshake timed out (dialTimeout)";
    }
    loop_.TickIfDue();
  }
}

void NativeMqttConnection::SendConnect() {
  in_.resize(kInputBytes);
  in_.shrink_to_fit();  // a connection lost inside a large packet left its buffer behind
  more_input_ = false;
  in_begin_ = in_end_ = 0;
  out_.clear();
  out_sent_ = 0;
  ping_outstanding_ = false;
  mqtt5::ConnectOptions connect;
  connect.client_id = loop_.client_id();
  connect.clean_start = loop_.session_expiry().count() == 0;
  connect.keep_alive_s = loop_.keep_alive_s();
  connect.session_expiry_s =
      static_cast<uint32_t>(std::clamp<int64_t>(loop_.session_expiry().count(), 0, INT32_MAX));
  if (!settings_.username.empty()) {
    connect.username = settings_.username;
  }
  if (!settings_.password.empty()) {
    connect.password = settings_.password;
  }
  mqtt5::AppendConnect(connect, out_);
  keep_alive_ = std::chrono::seconds(connect.keep_alive_s);
  last_write_ = Clock::now();
}

void NativeMqttConnection::Goodbye() {
  if (!loop_.accepted()) {
    // Never send a CONNECT that was not answered yet: with a persistent session's shared client
    // id it would take the session from whoever holds it now.
    out_.clear();
    out_sent_ = 0;
  } else if (!peer_disconnected_) {
    // Why we end it: a normal disconnection when stopping (with a persistent session the broker
    // keeps it), else the error.
    mqtt5::AppendDisconnect(drop_reason_.empty() ? mqtt5::kNormalDisconnection : drop_code_, out_);
  }
  const Clock::time_point goodbye = Clock::now() + kGoodbyeTimeout;
  while (Clock::now() < goodbye) {
    if (!WriteQueued().empty() || out_sent_ == out_.size() ||
        !loop_.WaitFor(channel_->fd(), channel_->write_waits_for(), goodbye)) {
      break;
    }
  }
  channel_->Shutdown();
}

std::string NativeMqttConnection::WriteQueued() {
  while (out_sent_ < out_.size()) {
    std::size_t done = 0;
    std::string error;
    const Channel::Io io =
        channel_->Write(out_.data() + out_sent_, out_.size() - out_sent_, done, error);
    if (io == Channel::Io::kProgress) {
      out_sent_ += done;
      last_write_ = Clock::now();
      continue;
    }
    if (io == Channel::Io::kWouldBlock) {
      return "";
    }
    return EndCause(io == Channel::Io::kClosed, "write", error);
  }
  return "";
}

std::string NativeMqttConnection::Turn(Clock::time_point connect_deadline) {
  Clock::time_point wake_at = loop_.next_tick();
  if (!loop_.accepted()) {
    wake_at = std::min(wake_at, connect_deadline);
  } else if (keep_alive_.count() > 0) {
    wake_at = std::min(wake_at, (ping_outstanding_ ? ping_sent_ : last_write_) + keep_alive_);
  }
  const bool ready_now = more_input_ || channel_->HoldsData();
  const bool writing = out_sent_ < out_.size();
  const short events = static_cast<short>(POLLIN | channel_->read_waits_for() |
                                          (writing ? channel_->write_waits_for() : 0));
  short revents = 0;
  if (loop_.Poll(channel_->fd(), events, ready_now ? 0 : PollTimeoutMs(wake_at), revents) < 0 &&
      errno != EINTR) {
    return absl::StrCat("poll: ", std::strerror(errno));
  }
  if ((revents & (POLLIN | POLLHUP | POLLERR)) != 0 || ready_now ||
      ((revents & POLLOUT) != 0 && channel_->read_waits_for() != 0)) {
    if (std::string ended = ReadAndHandle(); !ended.empty()) {
      return ended;
    }
  }
  HandlePackets();
  const Clock::time_point now = Clock::now();
  if (!loop_.accepted() && drop_reason_.empty() && now >= connect_deadline) {
    return "no CONNACK within dialTimeout";
  }
  if (loop_.accepted() && keep_alive_.count() > 0 && drop_reason_.empty()) {
    // The PINGRESP may still wait among unread bytes while a backlog is read.
    const bool input_drained = !more_input_ && !channel_->HoldsData();
    if (ping_outstanding_ && input_drained && now - ping_sent_ >= keep_alive_) {
      return "no PINGRESP within the keep-alive";
    }
    if (!ping_outstanding_ && now - last_write_ >= keep_alive_) {
      mqtt5::AppendPingReq(out_);
      ping_outstanding_ = true;
      ping_sent_ = now;
    }
  }
  if (loop_.accepted() && drop_reason_.empty()) {
    hooks_.on_turn();
  }
  // Everything queued this turn (the PUBACKs of a whole batch, the publishes) in as few writes as
  // the socket takes.
  if (std::string ended = WriteQueued(); !ended.empty()) {
    return ended;
  }
  if (out_sent_ == out_.size() || out_sent_ >= kInputBytes) {
    out_.erase(0, out_sent_);
    out_sent_ = 0;
  }
  loop_.TickIfDue();
  return "";
}

std::string NativeMqttConnection::ReadAndHandle() {
  more_input_ = false;
  std::size_t read_this_turn = 0;
  while (drop_reason_.empty()) {
    if (read_this_turn >= kMaxReadPerTurn) {
      more_input_ = true;  // the next turn reads on without waiting
      return "";
    }
    if (in_end_ == in_.size()) {
      HandlePackets();
      if (!drop_reason_.empty()) {
        return "";
      }
      if (in_begin_ > 0) {
        std::memmove(in_.data(), in_.data() + in_begin_, in_end_ - in_begin_);
        in_end_ -= in_begin_;
        in_begin_ = 0;
      } else if (in_end_ == in_.size()) {
        in_.resize(in_.size() * 2);  // one packet larger than the buffer
      }
    }
    std::size_t done = 0;
    std::string error;
    const Channel::Io io = channel_->Read(in_.data() + in_end_, in_.size() - in_end_, done, error);
    if (io == Channel::Io::kProgress) {
      in_end_ += done;
      read_this_turn += done;
      continue;
    }
    if (io == Channel::Io::kWouldBlock) {
      return "";
    }
    // What came before the end still counts (its PUBACKs cannot leave any more), and may say
    // why it ended (a DISCONNECT).
    HandlePackets();
    return EndCause(io == Channel::Io::kClosed, "read", error);
  }
  return "";
}

void NativeMqttConnection::HandlePackets() {
  while (in_end_ > in_begin_ && drop_reason_.empty()) {
    mqtt5::Frame frame;
    std::string error;
    const mqtt5::FrameResult result =
        mqtt5::NextFrame(std::string_view(in_.data() + in_begin_, in_end_ - in_begin_),
                         kMaxPacketBytes, frame, error);
    if (result == mqtt5::FrameResult::kIncomplete) {
      break;
    }
    const absl::Status handled = result == mqtt5::FrameResult::kMalformed
                                     ? absl::InvalidArgumentError(error)
                                     : HandlePacket(frame);
    if (absl::IsInvalidArgument(handled)) {
      Drop(absl::StrCat("a malformed packet from the broker: ", handled.message()),
           mqtt5::kMalformedPacket);
      return;
    }
    if (!handled.ok()) {
      Drop(std::string(handled.message()), mqtt5::kProtocolError);
      return;
    }
    in_begin_ += frame.size;
  }
  if (in_begin_ == in_end_) {
    in_begin_ = in_end_ = 0;
    if (in_.size() > kInputBytes) {
      in_.resize(kInputBytes);  // after one large packet, back to the usual buffer
      in_.shrink_to_fit();
    }
  }
}

absl::Status NativeMqttConnection::HandlePacket(const mqtt5::Frame& frame) {
  const mqtt5::PacketType type = frame.type();
  if (!loop_.accepted() && type != mqtt5::PacketType::kConnAck) {
    return absl::FailedPreconditionError(
        absl::StrCat("a ", mqtt5::PacketTypeName(frame.first_byte), " before CONNACK"));
  }
  switch (type) {
    case mqtt5::PacketType::kPublish:
      RETURN_IF_ERROR(mqtt5::ParsePublish(frame, publish_));
      hooks_.on_publish(publish_);
      if (publish_.qos == 1) {
        mqtt5::AppendPubAck(publish_.packet_id, out_);
      }
      return absl::OkStatus();
    case mqtt5::PacketType::kConnAck: {
      if (loop_.accepted()) {
        return absl::FailedPreconditionError("a second CONNACK from the broker");
      }
      mqtt5::ConnAck connack;
      RETURN_IF_ERROR(mqtt5::ParseConnAck(frame, connack));
      if (connack.reason_code != 0) {
        peer_disconnected_ = true;  // it closes the connection; nothing more is sent
        Drop(absl::StrCat("the broker refused the connection: ",
                          DescribeReason(connack.reason_code, connack.reason_string)));
        return absl::OkStatus();
      }
      if (connack.server_keep_alive.has_value()) {
        keep_alive_ = std::chrono::seconds(*connack.server_keep_alive);
      }
      hooks_.on_connected(loop_.Accepted(connack.session_present), connack);
      return absl::OkStatus();
    }
    case mqtt5::PacketType::kSubAck:
      RETURN_IF_ERROR(mqtt5::ParseSubAck(frame, suback_));
      hooks_.on_suback(suback_);
      return absl::OkStatus();
    case mqtt5::PacketType::kPubAck: {
      mqtt5::PubAck puback;
      RETURN_IF_ERROR(mqtt5::ParsePubAck(frame, puback));
      hooks_.on_puback(puback);
      return absl::OkStatus();
    }
    case mqtt5::PacketType::kPingResp:
      RETURN_IF_ERROR(mqtt5::ParsePingResp(frame));
      ping_outstanding_ = false;
      return absl::OkStatus();
    case mqtt5::PacketType::kDisconnect: {
      mqtt5::Disconnect disconnect;
      RETURN_IF_ERROR(mqtt5::ParseDisconnect(frame, disconnect));
      peer_disconnected_ = true;
      Drop(absl::StrCat("the broker sent DISCONNECT: ",
                        DescribeReason(disconnect.reason_code, disconnect.reason_string)));
      return absl::OkStatus();
    }
    default:
      return absl::FailedPreconditionError(absl::StrCat(
          "an unexpected ", mqtt5::PacketTypeName(frame.first_byte), " from the broker"));
  }
}

}  // namespace mmi::transport::internal
