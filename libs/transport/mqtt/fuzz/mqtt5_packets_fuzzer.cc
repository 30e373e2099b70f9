// The bytes a broker sends, read as NativeMqttConnection reads them: whole packets off the front of
// the buffer (NextFrame), each decoded by its type. Properties checked: nothing crashes or reads
// outside the input; a frame never claims more bytes than there are; every view a parse returns
// lies inside its frame's body; a PUBLISH that parses has a topic, a QoS of 0 or 1 and a packet
// identifier exactly when its QoS is 1.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "libs/transport/mqtt/internal/mqtt5_packets.h"

namespace mmi::transport::internal::mqtt5 {
namespace {

void Require(bool condition) {
  if (!condition) {
    std::abort();
  }
}

void RequireInside(std::string_view view, std::string_view body) {
  Require(view.empty() ||
          (view.data() >= body.data() && view.data() + view.size() <= body.data() + body.size()));
}

void ReadAll(std::string_view buffer) {
  Publish publish;
  SubAck suback;
  while (!buffer.empty()) {
    Frame frame;
    std::string error;
    const FrameResult result = NextFrame(buffer, 64 * 1024, frame, error);
    if (result != FrameResult::kComplete) {
      Require(result == FrameResult::kIncomplete || !error.empty());
      break;
    }
    Require(frame.size <= buffer.size() && frame.size > frame.body.size());
    RequireInside(frame.body, buffer);
    (void)PacketTypeName(frame.first_byte);
    switch (frame.type()) {
      case PacketType::kPublish:
        if (ParsePublish(frame, publish).ok()) {
          Require(!publish.topic.empty() && publish.qos <= 1);
          Require((publish.qos == 1) == (publish.packet_id != 0));
          RequireInside(publish.topic, frame.body);
          RequireInside(publish.payload, frame.body);
          if (publish.content_type.has_value()) {
            RequireInside(*publish.content_type, frame.body);
          }
          for (const auto& [name, value] : publish.user_properties) {
            RequireInside(name, frame.body);
            RequireInside(value, frame.body);
          }
        }
        break;
      case PacketType::kConnAck: {
        ConnAck connack;
        if (ParseConnAck(frame, connack).ok()) {
          Require(connack.receive_maximum > 0);
          RequireInside(connack.reason_string, frame.body);
        }
        break;
      }
      case PacketType::kSubAck:
        if (ParseSubAck(frame, suback).ok()) {
          Require(!suback.reason_codes.empty());
        }
        break;
      case PacketType::kDisconnect: {
        Disconnect disconnect;
        if (ParseDisconnect(frame, disconnect).ok()) {
          RequireInside(disconnect.reason_string, frame.body);
        }
        break;
      }
      case PacketType::kPubAck: {
        PubAck puback;
        if (ParsePubAck(frame, puback).ok()) {
          Require(frame.body.size() >= 2);
        }
        break;
      }
      case PacketType::kPingResp:
        (void)ParsePingResp(frame);
        break;
      default:
        break;
    }
    buffer.remove_prefix(frame.size);
  }
}

}  // namespace
}  // namespace mmi::transport::internal::mqtt5

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  mmi::transport::internal::mqtt5::ReadAll(
      std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
