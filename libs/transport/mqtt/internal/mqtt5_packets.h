// The MQTT 5 packets our client exchanges with its broker (OASIS MQTT 5.0, §2-§3), for the
// project's own connection (NativeMqttConnection): the client's CONNECT, PUBLISH (QoS 0 and 1),
// SUBSCRIBE, PUBACK, PINGREQ and DISCONNECT are written; the broker's CONNACK, PUBLISH (QoS 0 and
// 1), PUBACK, SUBACK, PINGRESP and DISCONNECT are read.
//
// Reading works on bytes already received: NextFrame() finds one whole packet at the front of a
// buffer (or says more bytes are needed), the Parse functions decode it without copying, so the
// views they return point into that buffer and live as long as its bytes do. Every string is
// checked to be well-formed UTF-8 without U+0000 (§1.5.4); every length against what is there.
// Anything else is an error that names what was wrong: the caller closes the connection
// (a malformed packet is a protocol error in MQTT, not a message to skip).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "libs/cloudevents/mqtt_codec.h"

namespace mmi::transport::internal::mqtt5 {

// The packet types this client writes or reads; PacketTypeName() names all sixteen.
enum class PacketType : uint8_t {
  kConnect = 1,
  kConnAck = 2,
  kPublish = 3,
  kPubAck = 4,
  kSubscribe = 8,
  kSubAck = 9,
  kPingReq = 12,
  kPingResp = 13,
  kDisconnect = 14,
};

// The largest Remaining Length the variable byte integer can carry (§1.5.5).
inline constexpr std::size_t kMaxRemainingLength = 268'435'455;
// The longest string or binary field (a two-byte length, §1.5.4).
inline constexpr std::size_t kMaxStringBytes = 65'535;

// The reason codes this client sends in a DISCONNECT (§3.14.2.1).
inline constexpr uint8_t kNormalDisconnection = 0x00;
inline constexpr uint8_t kMalformedPacket = 0x81;
inline constexpr uint8_t kProtocolError = 0x82;

// ---- Written by the client ----

struct ConnectOptions {
  std::string_view client_id;
  bool clean_start = true;
  uint16_t keep_alive_s = 0;      // 0 = no keep-alive
  uint32_t session_expiry_s = 0;  // 0 = the session ends with the connection (property omitted)
  // 65,535 (property omitted): no limit of ours; the broker's own bounds what it has in flight.
  uint16_t receive_maximum = 65'535;
  std::optional<std::string_view> username;
  std::optional<std::string_view> password;
};

// Each appends one whole packet to `out`.
void AppendConnect(const ConnectOptions& options, std::string& out);
// One SUBSCRIBE for all `filters` at `qos` (0 or 1), no-local off, retained messages as sent.
void AppendSubscribe(uint16_t packet_id, absl::Span<const std::string> filters, int qos,
                     std::string& out);
// One PUBLISH at `qos` (0 or 1; `packet_id` for QoS 1), not retained, with the message's Content
// Type and User Properties. kInvalidArgument, `out` unchanged, when a string is longer than MQTT
// carries.
absl::Status AppendPublish(std::string_view topic, int qos, uint16_t packet_id,
                           const cloudevents::MqttMessage& message, std::string& out);
// Success, no properties: the two-byte form (§3.4.2.1).
void AppendPubAck(uint16_t packet_id, std::string& out);
void AppendPingReq(std::string& out);
void AppendDisconnect(uint8_t reason_code, std::string& out);

// ---- Read from the broker ----

struct Frame {
  uint8_t first_byte = 0;  // packet type << 4 | flags
  std::string_view body;   // the Remaining Length bytes after the fixed header
  std::size_t size = 0;    // fixed header + body: what to consume
  PacketType type() const { return static_cast<PacketType>(first_byte >> 4); }
  uint8_t flags() const { return first_byte & 0x0F; }
};

enum class FrameResult { kComplete, kIncomplete, kMalformed };

// One packet at the front of `buffer`. kIncomplete: not all of it is there yet. kMalformed: a
// Remaining Length longer than four bytes or above `max_packet_bytes` (`error` says which).
FrameResult NextFrame(std::string_view buffer, std::size_t max_packet_bytes, Frame& frame,
                      std::string& error);

struct ConnAck {
  bool session_present = false;
  uint8_t reason_code = 0;
  uint16_t receive_maximum = 65'535;          // absent = 65,535
  std::optional<uint16_t> server_keep_alive;  // replaces ours when present (§3.2.2.3.14)
  uint32_t maximum_packet_size = 0;           // 0 = none given
  std::string_view reason_string;
};

struct SubAck {
  uint16_t packet_id = 0;
  std::vector<int> reason_codes;  // one per filter: the granted QoS, or >= 0x80 refused
};

struct Publish {
  std::string_view topic;
  int qos = 0;
  bool dup = false;
  bool retain = false;
  uint16_t packet_id = 0;  // QoS 1 only
  std::optional<std::string_view> content_type;
  // Kept between calls so that its capacity is reused.
  std::vector<std::pair<std::string_view, std::string_view>> user_properties;
  std::string_view payload;
};

struct PubAck {
  uint16_t packet_id = 0;
  uint8_t reason_code = 0;  // >= 0x80: the broker refused the message
};

struct Disconnect {
  uint8_t reason_code = 0;
  std::string_view reason_string;
};

// Each requires frame.type() to be its packet's type, and refuses reserved fixed-header flags.
absl::Status ParseConnAck(const Frame& frame, ConnAck& out);
absl::Status ParseSubAck(const Frame& frame, SubAck& out);
// QoS 2 is refused (our subscriptions ask for at most 1), and so is a Topic Alias (our CONNECT
// allows none), a wildcard in the topic and DUP on QoS 0.
absl::Status ParsePublish(const Frame& frame, Publish& out);
absl::Status ParsePubAck(const Frame& frame, PubAck& out);
absl::Status ParseDisconnect(const Frame& frame, Disconnect& out);
absl::Status ParsePingResp(const Frame& frame);

// The name of a packet type, for logs ("PUBREC", "type 0").
std::string PacketTypeName(uint8_t first_byte);

}  // namespace mmi::transport::internal::mqtt5
