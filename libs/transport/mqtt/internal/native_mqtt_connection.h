// The project's own MQTT 5 client connection (NativeMqttPublisher, NativeMqttSubscriber): one
// thread that connects (Clean Start or a persistent session, TLS / mTLS, username/password), reads
// the socket in large buffered chunks, decodes every whole packet in them (mqtt5_packets.h), hands
// each PUBLISH and PUBACK to its hook, writes what the hooks queued in one write per turn, keeps
// the connection alive and reconnects with backoff forever.
// Why not libmosquitto, which reads each packet in two to four recv() calls and writes each on
// its own: docs/adr/0003 and 0004.
//
// A received PUBLISH is acknowledged after its hook returned: with a persistent session, a
// connection lost before the PUBACK left means the broker sends it again (to this session); with
// Clean Start the owner's resync after the next SUBSCRIBE covers it (subscriber.h). Nothing the
// client sent is sent again on the next connection: the owner fails what awaited its PUBACK.
//
// Thread-safe. Lifecycle: Start() once, Stop() (idempotent) before destruction. Every hook runs
// on the connection's thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "libs/common/log.h"
#include "libs/transport/metrics.h"
#include "libs/transport/mqtt/internal/connection_loop.h"
#include "libs/transport/mqtt/internal/mqtt5_packets.h"
#include "libs/transport/settings.h"

struct ssl_ctx_st;  // OpenSSL's SSL_CTX
struct ssl_st;      // OpenSSL's SSL

namespace mmi::transport::internal {

struct TlsContextFree {
  void operator()(ssl_ctx_st* context) const;
};

class NativeMqttConnection {
 public:
  // Each does nothing unless set.
  struct Hooks {
    // After each CONNACK that accepted the connection; `reconnect` is false the first time.
    absl::AnyInvocable<void(bool reconnect, const mqtt5::ConnAck& connack)> on_connected =
        [](bool, const mqtt5::ConnAck&) {};
    // When an accepted connection ends.
    absl::AnyInvocable<void()> on_lost = [] {};
    // About every 100 ms, connected or not (log summaries).
    absl::AnyInvocable<void()> on_tick = [] {};
    // Every turn of an accepted connection (a socket event, a Wake() or a tick), before it
    // writes: the owner queues what it has to send.
    absl::AnyInvocable<void()> on_turn = [] {};
    absl::AnyInvocable<void(const mqtt5::SubAck& suback)> on_suback = [](const auto&) {};
    absl::AnyInvocable<void(const mqtt5::PubAck& puback)> on_puback = [](const auto&) {};
    // A received PUBLISH; its views live until the hook returns.
    absl::AnyInvocable<void(const mqtt5::Publish& publish)> on_publish = [](const auto&) {};
  };

  // `client_id` is the full MQTT client id; `session_expiry` 0 = Clean Start, otherwise a
  // persistent session kept that long, resumed on every reconnect. `metrics` and `logger` must
  // outlive this object.
  NativeMqttConnection(const MqttSettings& settings, std::string client_id,
                       std::chrono::seconds session_expiry, TransportMetrics& metrics,
                       const log::Logger& logger);
  ~NativeMqttConnection();
  NativeMqttConnection(const NativeMqttConnection&) = delete;
  NativeMqttConnection& operator=(const NativeMqttConnection&) = delete;

  // Checks the broker address and loads the TLS files (kInvalidArgument / kFailedPrecondition),
  // then starts the thread.
  absl::Status Start(Hooks hooks, const char* thread_name);

  // Stops reconnecting; a standing connection ends with a DISCONNECT (a persistent session stays
  // on the broker). No hook runs after it returns. Must not be called from a hook.
  void Stop() { loop_.Stop(); }

  bool connected() const { return loop_.connected(); }
  // Any thread: makes the loop turn now (runs on_turn), e.g. when there is something to publish.
  void Wake() { loop_.Wake(); }

  // Connection thread (a hook) only: queues a packet the client wrote (mqtt5::Append*); it is
  // sent when the hook's turn ends.
  std::string& output() { return out_; }
  // Connection thread only: the next packet identifier (never 0).
  uint16_t NextPacketId();
  // Connection thread (a hook): ends the current connection with a DISCONNECT carrying
  // `reason_code`; the next one follows the backoff.
  void Drop(std::string reason, uint8_t reason_code = mqtt5::kNormalDisconnection);

 private:
  using Clock = std::chrono::steady_clock;
  class Channel;  // the socket, plain or TLS

  absl::Status NewTlsContext();
  // One connection attempt (ConnectionLoop::Attempt): Open(), SendConnect(), Turn() until the
  // connection ends, Goodbye() when we end it (Stop(), Drop()). Returns why it ended ("" when
  // stopping).
  std::string Attempt();
  // The TCP connect within `deadline`, then the TLS handshake when TLS is on: "" or why not.
  std::string Open(Clock::time_point deadline);
  // TLS over the connected socket `fd`: the name to verify, then the handshake. "" or why not.
  std::string Handshake(ssl_st* ssl, int fd, Clock::time_point deadline);
  // Empties the buffers and queues the CONNECT.
  void SendConnect();
  // What ends a connection from our side: its DISCONNECT (when accepted) and whatever is queued,
  // best effort within a second, then the TLS close_notify.
  void Goodbye();
  // Writes what is queued until all of it is written or the socket would block. "" or why the
  // connection ended.
  std::string WriteQueued();
  // One turn: poll(), read what is waiting, handle every whole packet, write, keep-alive. "" or
  // why the connection ended.
  std::string Turn(Clock::time_point connect_deadline);
  // Reads what is waiting (up to kMaxReadPerTurn) in chunks as large as the buffer's free space,
  // handling the whole packets of each full buffer before the next read. "" or why it ended.
  std::string ReadAndHandle();
  // Handles the whole packets in the input buffer, until one ends the connection (Drop()).
  void HandlePackets();
  // Handles one packet. What the broker got wrong, for HandlePackets() to end the connection:
  // kInvalidArgument, a malformed packet; kFailedPrecondition, one it must not send now.
  absl::Status HandlePacket(const mqtt5::Frame& frame);
  // Why the connection ended when a read or write (`io`) found it closed or failed with `error`:
  // the broker's DISCONNECT, or our own reason for ending it, says more than the socket's end.
  std::string EndCause(bool closed, const char* io, const std::string& error) const;

  const MqttSettings settings_;
  std::unique_ptr<ssl_ctx_st, TlsContextFree> tls_context_;  // when TLS is on
  Hooks hooks_;
  ConnectionLoop loop_;

  // Connection thread only.
  std::unique_ptr<Channel> channel_;
  std::string in_;  // received bytes; [in_begin_, in_end_) not handled yet
  std::size_t in_begin_ = 0;
  std::size_t in_end_ = 0;
  std::string out_;  // packets to write; [0, out_sent_) written
  std::size_t out_sent_ = 0;
  mqtt5::Publish publish_;  // reused: its user-property vector keeps its capacity
  mqtt5::SubAck suback_;
  std::chrono::seconds keep_alive_{0};
  Clock::time_point last_write_;
  Clock::time_point ping_sent_;
  bool ping_outstanding_ = false;
  bool more_input_ = false;         // the last turn stopped reading at kMaxReadPerTurn
  bool peer_disconnected_ = false;  // the broker ended it (DISCONNECT, refusing CONNACK)
  uint8_t drop_code_ = 0;           // the DISCONNECT reason code when we end it
  uint16_t last_packet_id_ = 0;
  std::string drop_reason_;
};

}  // namespace mmi::transport::internal
