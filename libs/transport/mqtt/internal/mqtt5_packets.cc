#include "libs/transport/mqtt/internal/mqtt5_packets.h"

#include <simdjson.h>

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace mmi::transport::internal::mqtt5 {
namespace {

// Property identifiers (§2.2.2.2) this code reads or must recognise.
constexpr uint8_t kContentType = 0x03;
constexpr uint8_t kSessionExpiryInterval = 0x11;
constexpr uint8_t kServerKeepAlive = 0x13;
constexpr uint8_t kReasonString = 0x1F;
constexpr uint8_t kReceiveMaximum = 0x21;
constexpr uint8_t kTopicAlias = 0x23;
constexpr uint8_t kUserProperty = 0x26;
constexpr uint8_t kMaximumPacketSize = 0x27;

// Bounds-checked reads from one packet's body; the first failure sticks and names what failed.
class Reader {
 public:
  explicit Reader(std::string_view bytes) : bytes_(bytes) {}

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  std::size_t left() const { return bytes_.size() - at_; }

  uint8_t Byte(std::string_view what) { return static_cast<uint8_t>(BigEndian(1, what)); }
  uint16_t TwoBytes(std::string_view what) { return static_cast<uint16_t>(BigEndian(2, what)); }
  uint32_t FourBytes(std::string_view what) { return BigEndian(4, what); }

  uint32_t VarInt(std::string_view what) {
    uint32_t value = 0;
    for (int i = 0; i < 4; ++i) {
      const uint8_t byte = Byte(what);
      if (!ok()) {
        return 0;
      }
      value |= static_cast<uint32_t>(byte & 0x7F) << (7 * i);
      if ((byte & 0x80) == 0) {
        return value;
      }
    }
    Fail(absl::StrCat(std::string(what), ": a variable byte integer longer than four bytes"));
    return 0;
  }

  std::string_view Binary(std::string_view what) {
    const uint16_t length = TwoBytes(what);
    if (!ok() || !Need(length, what)) {
      return {};
    }
    const std::string_view value = bytes_.substr(at_, length);
    at_ += length;
    return value;
  }

  std::string_view String(std::string_view what) {
    const std::string_view value = Binary(what);
    if (ok() && (!simdjson::validate_utf8(value.data(), value.size()) ||
                 value.find('\0') != std::string_view::npos)) {
      Fail(absl::StrCat(std::string(what), ": not well-formed UTF-8 (or a U+0000)"));
      return {};
    }
    return value;
  }

  std::string_view Rest() {
    const std::string_view rest = bytes_.substr(at_);
    at_ = bytes_.size();
    return rest;
  }

  // The next `length` bytes as their own Reader (a property block).
  Reader Sub(std::size_t length, std::string_view what) {
    if (!Need(length, what)) {
      return Reader({});
    }
    Reader sub(bytes_.substr(at_, length));
    at_ += length;
    return sub;
  }

  void Fail(std::string error) {
    if (error_.empty()) {
      error_ = std::move(error);
    }
  }

 private:
  // An `n`-byte integer, high byte first (§1.5.2, §1.5.3).
  uint32_t BigEndian(int n, std::string_view what) {
    uint32_t value = 0;
    if (Need(n, what)) {
      for (int i = 0; i < n; ++i) {
        value = (value << 8) | static_cast<uint8_t>(bytes_[at_++]);
      }
    }
    return value;
  }

  bool Need(std::size_t n, std::string_view what) {
    if (!ok()) {
      return false;
    }
    if (left() < n) {
      Fail(absl::StrCat(std::string(what), ": the packet ends early"));
      return false;
    }
    return true;
  }

  std::string_view bytes_;
  std::size_t at_ = 0;
  std::string error_;
};

// Skips the value of property `id` by how it is encoded (§2.2.2.2); an unknown id ends the parse
// (the packet cannot be walked past a property whose length is not known).
void SkipProperty(uint8_t id, Reader& props, std::string_view packet_name) {
  switch (id) {
    case 0x01:  // Payload Format Indicator
    case 0x17:  // Request Problem Information
    case 0x19:  // Request Response Information
    case 0x24:  // Maximum QoS
    case 0x25:  // Retain Available
    case 0x28:  // Wildcard Subscription Available
    case 0x29:  // Subscription Identifier Available
    case 0x2A:  // Shared Subscription Available
      props.Byte(packet_name);
      return;
    case 0x13:  // Server Keep Alive
    case 0x21:  // Receive Maximum
    case 0x22:  // Topic Alias Maximum
    case 0x23:  // Topic Alias
      props.TwoBytes(packet_name);
      return;
    case 0x02:  // Message Expiry Interval
    case 0x11:  // Session Expiry Interval
    case 0x18:  // Will Delay Interval
    case 0x27:  // Maximum Packet Size
      props.FourBytes(packet_name);
      return;
    case 0x0B:  // Subscription Identifier
      props.VarInt(packet_name);
      return;
    case 0x26:  // User Property: a string pair
      props.String(packet_name);
      [[fallthrough]];
    case 0x03:  // Content Type
    case 0x08:  // Response Topic
    case 0x12:  // Assigned Client Identifier
    case 0x15:  // Authentication Method
    case 0x1A:  // Response Information
    case 0x1C:  // Server Reference
    case 0x1F:  // Reason String
      props.String(packet_name);
      return;
    case 0x09:  // Correlation Data
    case 0x16:  // Authentication Data
      props.Binary(packet_name);
      return;
    default:
      props.Fail(absl::StrCat(std::string(packet_name), ": unknown property 0x", absl::Hex(id)));
  }
}

// Walks a property block: `on_property(id, reader)` reads the value of the ids it wants and
// returns true; for the others it returns false and the value is skipped by its kind.
template <typename OnProperty>
void ReadProperties(Reader& packet, std::string_view packet_name, OnProperty on_property) {
  const uint32_t length = packet.VarInt(packet_name);
  Reader props = packet.Sub(length, packet_name);
  if (!packet.ok()) {
    return;
  }
  while (props.ok() && props.left() > 0) {
    if (const uint8_t id = props.Byte(packet_name); !on_property(id, props)) {
      SkipProperty(id, props, packet_name);
    }
  }
  if (!props.ok()) {
    packet.Fail(props.error());
  }
}

absl::Status Result(const Reader& reader) {
  return reader.ok() ? absl::OkStatus() : absl::InvalidArgumentError(reader.error());
}

// The property block that ends a packet and may be left out with everything before it that the
// packet allows to leave out (CONNACK, PUBACK, DISCONNECT); nothing may follow it.
template <typename OnProperty>
absl::Status ReadLastProperties(Reader& packet, std::string_view packet_name,
                                OnProperty on_property) {
  if (packet.ok() && packet.left() > 0) {
    ReadProperties(packet, packet_name, std::move(on_property));
    if (packet.ok() && packet.left() != 0) {
      packet.Fail(absl::StrCat(std::string(packet_name), ": bytes after the properties"));
    }
  }
  return Result(packet);
}

// A Reader of the body of a packet whose fixed-header flags are reserved (0): failed already
// when they are not.
Reader Body(const Frame& frame, std::string_view packet_name) {
  Reader reader(frame.body);
  if (frame.flags() != 0) {
    reader.Fail(absl::StrCat(std::string(packet_name), ": reserved fixed-header flags set"));
  }
  return reader;
}

// An `n`-byte integer, high byte first.
void AppendBigEndian(uint32_t value, int n, std::string& out) {
  for (int shift = 8 * (n - 1); shift >= 0; shift -= 8) {
    out.push_back(static_cast<char>((value >> shift) & 0xFF));
  }
}

void AppendVarInt(std::size_t value, std::string& out) {
  do {
    auto byte = static_cast<uint8_t>(value & 0x7F);
    value >>= 7;
    if (value > 0) {
      byte |= 0x80;
    }
    out.push_back(static_cast<char>(byte));
  } while (value > 0);
}

void AppendString(std::string_view text, std::string& out) {
  AppendBigEndian(static_cast<uint16_t>(text.size()), 2, out);
  out.append(text);
}

// The fixed header of a packet of `type` with `flags` and a body of `length` bytes.
void AppendFixedHeader(PacketType type, uint8_t flags, std::size_t length, std::string& out) {
  out.push_back(static_cast<char>((static_cast<uint8_t>(type) << 4) | flags));
  AppendVarInt(length, out);
}

void AppendPacket(PacketType type, uint8_t flags, std::string_view body, std::string& out) {
  AppendFixedHeader(type, flags, body.size(), out);
  out.append(body);
}

}  // namespace

void AppendConnect(const ConnectOptions& options, std::string& out) {
  std::string body;
  AppendString("MQTT", body);
  body.push_back(5);  // protocol version
  // The Connect Flags (§3.1.2.3): User Name, Password, Clean Start.
  body.push_back(static_cast<char>((options.username.has_value() ? 0x80 : 0) |
                                   (options.password.has_value() ? 0x40 : 0) |
                                   (options.clean_start ? 0x02 : 0)));
  AppendBigEndian(options.keep_alive_s, 2, body);
  std::string props;
  if (options.session_expiry_s > 0) {
    props.push_back(static_cast<char>(kSessionExpiryInterval));
    AppendBigEndian(options.session_expiry_s, 4, props);
  }
  if (options.receive_maximum != 65'535) {
    props.push_back(static_cast<char>(kReceiveMaximum));
    AppendBigEndian(options.receive_maximum, 2, props);
  }
  AppendVarInt(props.size(), body);
  body.append(props);
  AppendString(options.client_id, body);
  if (options.username.has_value()) {
    AppendString(*options.username, body);
  }
  if (options.password.has_value()) {
    AppendString(*options.password, body);
  }
  AppendPacket(PacketType::kConnect, 0, body, out);
}

void AppendSubscribe(uint16_t packet_id, absl::Span<const std::string> filters, int qos,
                     std::string& out) {
  std::string body;
  AppendBigEndian(packet_id, 2, body);
  body.push_back(0);  // no properties
  for (const std::string& filter : filters) {
    AppendString(filter, body);
    body.push_back(static_cast<char>(qos & 0x03));  // no-local 0, as published 0, retain 0
  }
  AppendPacket(PacketType::kSubscribe, 0x02, body, out);  // flags 0b0010 (§3.8.1)
}

absl::Status AppendPublish(std::string_view topic, int qos, uint16_t packet_id,
                           const cloudevents::MqttMessage& message, std::string& out) {
  std::string props;
  std::size_t longest = topic.size();
  if (message.content_type.has_value()) {
    props.push_back(static_cast<char>(kContentType));
    AppendString(*message.content_type, props);
    longest = std::max(longest, message.content_type->size());
  }
  for (const auto& [name, value] : message.user_properties) {
    props.push_back(static_cast<char>(kUserProperty));
    AppendString(name, props);
    AppendString(value, props);
    longest = std::max({longest, name.size(), value.size()});
  }
  if (longest > kMaxStringBytes) {
    return absl::InvalidArgumentError(absl::StrCat("PUBLISH: a topic or property of ", longest,
                                                   " bytes, above MQTT's ", kMaxStringBytes));
  }
  std::string header;
  AppendString(topic, header);
  if (qos == 1) {
    AppendBigEndian(packet_id, 2, header);
  }
  AppendVarInt(props.size(), header);
  const std::size_t length = header.size() + props.size() + message.payload.size();
  if (length > kMaxRemainingLength) {
    return absl::InvalidArgumentError(
        absl::StrCat("PUBLISH: ", length, " bytes, above MQTT's ", kMaxRemainingLength));
  }
  AppendFixedHeader(PacketType::kPublish, static_cast<uint8_t>(qos << 1), length, out);
  absl::StrAppend(&out, header, props, message.payload);
  return absl::OkStatus();
}

void AppendPubAck(uint16_t packet_id, std::string& out) {
  AppendFixedHeader(PacketType::kPubAck, 0, 2, out);
  AppendBigEndian(packet_id, 2, out);
}

void AppendPingReq(std::string& out) { AppendFixedHeader(PacketType::kPingReq, 0, 0, out); }

void AppendDisconnect(uint8_t reason_code, std::string& out) {
  AppendFixedHeader(PacketType::kDisconnect, 0, 2, out);
  out.push_back(static_cast<char>(reason_code));
  out.push_back(0);  // no properties
}

FrameResult NextFrame(std::string_view buffer, std::size_t max_packet_bytes, Frame& frame,
                      std::string& error) {
  if (buffer.size() < 2) {
    return FrameResult::kIncomplete;
  }
  Reader header(buffer.substr(1));
  const std::size_t length = header.VarInt("Remaining Length");
  if (!header.ok()) {
    // Not ended within four bytes that were all there: malformed; else more bytes are needed.
    if (buffer.size() < 5) {
      return FrameResult::kIncomplete;
    }
    error = "a Remaining Length longer than four bytes";
    return FrameResult::kMalformed;
  }
  const std::size_t at = buffer.size() - header.left();
  if (at + length > max_packet_bytes) {
    error = absl::StrCat("a ", PacketTypeName(static_cast<uint8_t>(buffer[0])), " of ", at + length,
                         " bytes, above the limit of ", max_packet_bytes);
    return FrameResult::kMalformed;
  }
  if (buffer.size() - at < length) {
    return FrameResult::kIncomplete;
  }
  frame.first_byte = static_cast<uint8_t>(buffer[0]);
  frame.body = buffer.substr(at, length);
  frame.size = at + length;
  return FrameResult::kComplete;
}

absl::Status ParseConnAck(const Frame& frame, ConnAck& out) {
  out = ConnAck{};
  Reader r = Body(frame, "CONNACK");
  const uint8_t flags = r.Byte("CONNACK");
  if (r.ok() && (flags & 0xFE) != 0) {
    r.Fail("CONNACK: reserved acknowledge flags set");
  }
  out.session_present = (flags & 0x01) != 0;
  out.reason_code = r.Byte("CONNACK");
  // A refusal may come without properties.
  return ReadLastProperties(r, "CONNACK", [&](uint8_t id, Reader& p) {
    switch (id) {
      case kReceiveMaximum:
        out.receive_maximum = p.TwoBytes("CONNACK Receive Maximum");
        if (p.ok() && out.receive_maximum == 0) {
          p.Fail("CONNACK: Receive Maximum 0");
        }
        return true;
      case kServerKeepAlive:
        out.server_keep_alive = p.TwoBytes("CONNACK Server Keep Alive");
        return true;
      case kMaximumPacketSize:
        out.maximum_packet_size = p.FourBytes("CONNACK Maximum Packet Size");
        return true;
      case kReasonString:
        out.reason_string = p.String("CONNACK Reason String");
        return true;
      default:
        return false;
    }
  });
}

absl::Status ParseSubAck(const Frame& frame, SubAck& out) {
  out.reason_codes.clear();
  Reader r = Body(frame, "SUBACK");
  out.packet_id = r.TwoBytes("SUBACK");
  ReadProperties(r, "SUBACK", [](uint8_t, Reader&) { return false; });
  while (r.ok() && r.left() > 0) {
    out.reason_codes.push_back(r.Byte("SUBACK"));
  }
  if (r.ok() && out.reason_codes.empty()) {
    r.Fail("SUBACK: no reason code");
  }
  return Result(r);
}

absl::Status ParsePublish(const Frame& frame, Publish& out) {
  const uint8_t flags = frame.flags();
  out.dup = (flags & 0x08) != 0;
  out.qos = (flags >> 1) & 0x03;
  out.retain = (flags & 0x01) != 0;
  out.packet_id = 0;
  out.content_type.reset();
  out.user_properties.clear();
  out.payload = {};
  if (out.qos > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("PUBLISH: QoS ", out.qos, ", above what was subscribed (at most 1)"));
  }
  if (out.qos == 0 && out.dup) {
    return absl::InvalidArgumentError("PUBLISH: DUP set on QoS 0");
  }
  Reader r(frame.body);
  out.topic = r.String("PUBLISH topic");
  if (r.ok() && out.topic.empty()) {
    r.Fail("PUBLISH: an empty topic (no Topic Alias was allowed)");
  }
  if (r.ok() && out.topic.find_first_of("+#") != std::string_view::npos) {
    r.Fail("PUBLISH: a wildcard in the topic");
  }
  if (out.qos == 1) {
    out.packet_id = r.TwoBytes("PUBLISH packet identifier");
    if (r.ok() && out.packet_id == 0) {
      r.Fail("PUBLISH: packet identifier 0");
    }
  }
  ReadProperties(r, "PUBLISH", [&](uint8_t id, Reader& p) {
    switch (id) {
      case kContentType:
        out.content_type = p.String("PUBLISH Content Type");
        return true;
      case kUserProperty: {
        const std::string_view name = p.String("PUBLISH User Property");
        const std::string_view value = p.String("PUBLISH User Property");
        if (p.ok()) {
          out.user_properties.emplace_back(name, value);
        }
        return true;
      }
      case kTopicAlias:
        p.Fail("PUBLISH: a Topic Alias, although our CONNECT allowed none");
        return true;
      default:
        return false;
    }
  });
  out.payload = r.Rest();
  return Result(r);
}

absl::Status ParsePubAck(const Frame& frame, PubAck& out) {
  out = PubAck{};
  Reader r = Body(frame, "PUBACK");
  out.packet_id = r.TwoBytes("PUBACK");
  if (r.ok() && r.left() > 0) {
    out.reason_code = r.Byte("PUBACK");
  }
  return ReadLastProperties(r, "PUBACK", [](uint8_t, Reader&) { return false; });
}

absl::Status ParseDisconnect(const Frame& frame, Disconnect& out) {
  out = Disconnect{};
  Reader r = Body(frame, "DISCONNECT");
  if (r.ok() && r.left() > 0) {  // else a normal disconnection, no properties (§3.14.2.1)
    out.reason_code = r.Byte("DISCONNECT");
  }
  return ReadLastProperties(r, "DISCONNECT", [&](uint8_t id, Reader& p) {
    if (id == kReasonString) {
      out.reason_string = p.String("DISCONNECT Reason String");
      return true;
    }
    return false;
  });
}

absl::Status ParsePingResp(const Frame& frame) {
  Reader r = Body(frame, "PINGRESP");
  if (r.ok() && r.left() != 0) {
    r.Fail("PINGRESP: a body, which it has none of");
  }
  return Result(r);
}

std::string PacketTypeName(uint8_t first_byte) {
  static constexpr const char* kNames[] = {"type 0",    "CONNECT",  "CONNACK",     "PUBLISH",
                                           "PUBACK",    "PUBREC",   "PUBREL",      "PUBCOMP",
                                           "SUBSCRIBE", "SUBACK",   "UNSUBSCRIBE", "UNSUBACK",
                                           "PINGREQ",   "PINGRESP", "DISCONNECT",  "AUTH"};
  return kNames[first_byte >> 4];
}

}  // namespace mmi::transport::internal::mqtt5
