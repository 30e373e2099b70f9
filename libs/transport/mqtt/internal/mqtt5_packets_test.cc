#include "libs/transport/mqtt/internal/mqtt5_packets.h"

#include <gtest/gtest.h>

#include <deque>
#include <string>
#include <vector>

namespace mmi::transport::internal::mqtt5 {
namespace {

using namespace std::string_literals;

std::string Str(std::string_view text) {
  std::string out;
  out.push_back(static_cast<char>(text.size() >> 8));
  out.push_back(static_cast<char>(text.size() & 0xFF));
  out.append(text);
  return out;
}

// A whole packet: first byte, Remaining Length (one byte here: bodies < 128), body.
std::string Packet(uint8_t first_byte, const std::string& body) {
  EXPECT_LT(body.size(), 128u);
  return std::string(1, static_cast<char>(first_byte)) +
         std::string(1, static_cast<char>(body.size())) + body;
}

// The frame of `bytes`, kept alive for the rest of the test binary (a Frame's views point into
// the bytes).
Frame FrameOf(std::string bytes) {
  static std::deque<std::string> kept;
  const std::string& stored = kept.emplace_back(std::move(bytes));
  Frame frame;
  std::string error;
  EXPECT_EQ(NextFrame(stored, 1 << 20, frame, error), FrameResult::kComplete) << error;
  return frame;
}

TEST(Mqtt5PacketsTest, ConnectCarriesVersionFlagsKeepAliveSessionExpiryAndCredentials) {
  ConnectOptions options;
  options.client_id = "src-sub";
  options.clean_start = false;
  options.keep_alive_s = 30;
  options.session_expiry_s = 600;
  options.receive_maximum = 100;
  options.username = "user";
  options.password = "pw";
  std::string out;
  AppendConnect(options, out);
  const std::string body = Str("MQTT") + "\x05"s + "\xC0"s + "\x00\x1E"s +
                           "\x08\x11\x00\x00\x02\x58\x21\x00\x64"s + Str("src-sub") + Str("user") +
                           Str("pw");
  EXPECT_EQ(out, Packet(0x10, body));
}

TEST(Mqtt5PacketsTest, CleanStartConnectWithoutPropertiesOrCredentials) {
  ConnectOptions options;
  options.client_id = "c";
  std::string out;
  AppendConnect(options, out);
  EXPECT_EQ(out, Packet(0x10, Str("MQTT") + "\x05\x02\x00\x00\x00"s + Str("c")));
}

TEST(Mqtt5PacketsTest, SubscribePubAckPingAndDisconnect) {
  std::string out;
  AppendSubscribe(7, std::vector<std::string>{"a/+", "b"}, 1, out);
  EXPECT_EQ(out, Packet(0x82, "\x00\x07\x00"s + Str("a/+") + "\x01"s + Str("b") + "\x01"s));
  out.clear();
  AppendPubAck(0x1234, out);
  AppendPingReq(out);
  AppendDisconnect(0x82, out);
  EXPECT_EQ(out, "\x40\x02\x12\x34\xC0\x00\xE0\x02\x82\x00"s);
}

TEST(Mqtt5PacketsTest, PublishRoundTripsTopicPacketIdPropertiesAndPayload) {
  cloudevents::MqttMessage message;
  message.payload = std::string(300, 'p');  // a two-byte Remaining Length
  message.content_type = "application/json";
  message.user_properties = {{"ce_id", "e1"}, {"ce_type", "t"}};
  std::string out = "x";  // appended after what is there
  ASSERT_TRUE(AppendPublish("sources/s/events", 1, 0x0102, message, out).ok());
  EXPECT_EQ(out.substr(0, 2), "x\x32"s);  // PUBLISH, QoS 1
  Publish publish;
  ASSERT_TRUE(ParsePublish(FrameOf(out.substr(1)), publish).ok());
  EXPECT_EQ(publish.topic, "sources/s/events");
  EXPECT_EQ(publish.qos, 1);
  EXPECT_EQ(publish.packet_id, 0x0102);
  EXPECT_EQ(publish.content_type, "application/json");
  ASSERT_EQ(publish.user_properties.size(), 2u);
  EXPECT_EQ(publish.user_properties[1].first, "ce_type");
  EXPECT_EQ(publish.payload, message.payload);

  out.clear();
  ASSERT_TRUE(AppendPublish("t", 0, 0, cloudevents::MqttMessage{}, out).ok());
  EXPECT_EQ(out, Packet(0x30, Str("t") + "\x00"s));  // QoS 0: no packet id, no properties
}

TEST(Mqtt5PacketsTest, PublishWithAStringLongerThanMqttCarriesIsRefused) {
  cloudevents::MqttMessage message;
  message.user_properties = {{"ce_big", std::string(kMaxStringBytes + 1, 'v')}};
  std::string out = "kept";
  const absl::Status status = AppendPublish("t", 1, 1, message, out);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(out, "kept");
}

TEST(Mqtt5PacketsTest, PubAckShortAndWithReasonCodeAndProperties) {
  PubAck puback;
  ASSERT_TRUE(ParsePubAck(FrameOf(Packet(0x40, "\x00\x07"s)), puback).ok());
  EXPECT_EQ(puback.packet_id, 7);
  EXPECT_EQ(puback.reason_code, 0);
  ASSERT_TRUE(ParsePubAck(FrameOf(Packet(0x40, "\x00\x08\x87\x05\x1F"s + Str("no"))), puback).ok());
  EXPECT_EQ(puback.packet_id, 8);
  EXPECT_EQ(puback.reason_code, 0x87);
  EXPECT_FALSE(ParsePubAck(FrameOf(Packet(0x40, "\x00"s)), puback).ok());
  EXPECT_FALSE(ParsePubAck(FrameOf(Packet(0x41, "\x00\x07"s)), puback).ok());  // flags
}

TEST(Mqtt5PacketsTest, FramesNeedTheirWholeBodyAndAMultiByteLength) {
  std::string big(200, 'x');
  std::string bytes = "\x30\xC8\x01"s + big;  // 200 = 0xC8 0x01
  Frame frame;
  std::string error;
  for (std::size_t cut : {0u, 1u, 2u, 3u, 100u, 202u}) {
    EXPECT_EQ(NextFrame(std::string_view(bytes).substr(0, cut), 1 << 20, frame, error),
              FrameResult::kIncomplete)
        << cut;
  }
  ASSERT_EQ(NextFrame(bytes + "\xD0"s, 1 << 20, frame, error), FrameResult::kComplete);
  EXPECT_EQ(frame.type(), PacketType::kPublish);
  EXPECT_EQ(frame.size, 203u);
  EXPECT_EQ(frame.body.size(), 200u);
}

TEST(Mqtt5PacketsTest, FrameLongerThanTheLimitOrItsLengthFieldIsMalformed) {
  Frame frame;
  std::string error;
  EXPECT_EQ(NextFrame("\x30\xFF\xFF\xFF\xFF\x01"s, 1 << 20, frame, error), FrameResult::kMalformed);
  EXPECT_NE(error.find("four bytes"), std::string::npos) << error;
  EXPECT_EQ(NextFrame("\x30\xC8\x01"s, 100, frame, error), FrameResult::kMalformed);
  EXPECT_NE(error.find("PUBLISH of 203 bytes"), std::string::npos) << error;
}

TEST(Mqtt5PacketsTest, ConnAckWithProperties) {
  const std::string body = "\x01\x00\x13"s + "\x21\x00\x14"s + "\x13\x00\x3C"s +
                           "\x27\x00\x01\x00\x00"s + "\x1F"s + Str("ok") + "\x22\x00\x0A"s;
  ConnAck connack;
  ASSERT_TRUE(ParseConnAck(FrameOf(Packet(0x20, body)), connack).ok());
  EXPECT_TRUE(connack.session_present);
  EXPECT_EQ(connack.reason_code, 0);
  EXPECT_EQ(connack.receive_maximum, 20);
  EXPECT_EQ(connack.server_keep_alive, 60);
  EXPECT_EQ(connack.maximum_packet_size, 65536u);
  EXPECT_EQ(connack.reason_string, "ok");
}

TEST(Mqtt5PacketsTest, ConnAckRefusalWithoutProperties) {
  ConnAck connack;
  ASSERT_TRUE(ParseConnAck(FrameOf(Packet(0x20, "\x00\x87"s)), connack).ok());
  EXPECT_EQ(connack.reason_code, 0x87);
  EXPECT_EQ(connack.receive_maximum, 65535);
}

TEST(Mqtt5PacketsTest, BadConnAcksAreErrors) {
  ConnAck connack;
  EXPECT_FALSE(ParseConnAck(FrameOf(Packet(0x20, "\x02\x00\x00"s)), connack).ok());  // reserved
  EXPECT_FALSE(ParseConnAck(FrameOf(Packet(0x20, "\x00\x00\x03\x21\x00\x00"s)), connack).ok());
  EXPECT_FALSE(ParseConnAck(FrameOf(Packet(0x20, "\x00\x00\x02\x7F\x00"s)), connack).ok());
  EXPECT_FALSE(ParseConnAck(FrameOf(Packet(0x20, "\x00\x00\x05\x21\x00"s)), connack).ok());
}

TEST(Mqtt5PacketsTest, SubAckReasonCodes) {
  SubAck suback;
  ASSERT_TRUE(
      ParseSubAck(FrameOf(Packet(0x90, "\x00\x07\x04\x1F\x00\x01x\x01\x87"s)), suback).ok());
  EXPECT_EQ(suback.packet_id, 7);
  EXPECT_EQ(suback.reason_codes, (std::vector<int>{1, 0x87}));
  EXPECT_FALSE(ParseSubAck(FrameOf(Packet(0x90, "\x00\x07\x00"s)), suback).ok());
}

TEST(Mqtt5PacketsTest, PublishQos1WithContentTypeUserPropertiesAndPayload) {
  const std::string props = "\x01\x00"s + "\x03"s + Str("application/json") + "\x26"s +
                            Str("ce-type") + Str("t") + "\x26"s + Str("ce-id") + Str("") +
                            "\x0B\x05"s + "\x02\x00\x00\x00\x10"s;
  const std::string body = Str("sources/s/consumers/c/agentevents") + "\x01\x02"s +
                           std::string(1, static_cast<char>(props.size())) + props + "{}";
  Publish publish;
  ASSERT_TRUE(ParsePublish(FrameOf(Packet(0x3A, body)), publish).ok());  // DUP, QoS 1
  EXPECT_EQ(publish.topic, "sources/s/consumers/c/agentevents");
  EXPECT_EQ(publish.qos, 1);
  EXPECT_TRUE(publish.dup);
  EXPECT_FALSE(publish.retain);
  EXPECT_EQ(publish.packet_id, 0x0102);
  EXPECT_EQ(publish.content_type, "application/json");
  ASSERT_EQ(publish.user_properties.size(), 2u);
  EXPECT_EQ(publish.user_properties[0].first, "ce-type");
  EXPECT_EQ(publish.user_properties[0].second, "t");
  EXPECT_EQ(publish.user_properties[1].first, "ce-id");
  EXPECT_EQ(publish.user_properties[1].second, "");
  EXPECT_EQ(publish.payload, "{}");

  // The same Publish reused for a QoS 0 message without properties: nothing of the last stays.
  ASSERT_TRUE(ParsePublish(FrameOf(Packet(0x31, Str("t") + "\x00"s + "x")), publish).ok());
  EXPECT_EQ(publish.qos, 0);
  EXPECT_TRUE(publish.retain);
  EXPECT_EQ(publish.packet_id, 0);
  EXPECT_FALSE(publish.content_type.has_value());
  EXPECT_TRUE(publish.user_properties.empty());
  EXPECT_EQ(publish.payload, "x");
}

TEST(Mqtt5PacketsTest, BadPublishesAreErrorsThatSayWhy) {
  Publish publish;
  auto error = [&](const std::string& packet) {
    const absl::Status s = ParsePublish(FrameOf(packet), publish);
    EXPECT_FALSE(s.ok());
    return std::string(s.message());
  };
  EXPECT_NE(error(Packet(0x34, Str("t") + "\x00\x01\x00"s)).find("QoS 2"), std::string::npos);
  EXPECT_NE(error(Packet(0x32, Str("t") + "\x00\x00\x00"s)).find("identifier 0"),
            std::string::npos);
  EXPECT_NE(error(Packet(0x30, Str("") + "\x00"s)).find("empty topic"), std::string::npos);
  EXPECT_NE(error(Packet(0x30, Str("t") + "\x03\x23\x00\x01"s)).find("Topic Alias"),
            std::string::npos);
  EXPECT_NE(error(Packet(0x30, Str("\xC3\x28") + "\x00"s)).find("UTF-8"), std::string::npos);
  EXPECT_NE(error(Packet(0x30, Str("a\0b"s) + "\x00"s)).find("UTF-8"), std::string::npos);
  EXPECT_NE(error(Packet(0x30, Str("t") + "\x02\x7F\x00"s)).find("unknown property 0x7f"),
            std::string::npos);
  EXPECT_NE(error(Packet(0x30, Str("t") + "\x05\x26\x00\x01"s + "a")).find("ends early"),
            std::string::npos);
  EXPECT_NE(error(Packet(0x30, "\x00\x05t"s)).find("ends early"), std::string::npos);
}

TEST(Mqtt5PacketsTest, ReservedFlagsDupOnQos0WildcardsAndTrailingBytesAreErrors) {
  Publish publish;
  EXPECT_FALSE(ParsePublish(FrameOf(Packet(0x38, Str("t") + "\x00"s)), publish).ok());
  EXPECT_FALSE(ParsePublish(FrameOf(Packet(0x30, Str("a/+") + "\x00"s)), publish).ok());
  EXPECT_FALSE(ParsePublish(FrameOf(Packet(0x30, Str("a/#") + "\x00"s)), publish).ok());
  ConnAck connack;
  EXPECT_FALSE(ParseConnAck(FrameOf(Packet(0x21, "\x00\x00\x00"s)), connack).ok());
  EXPECT_FALSE(ParseConnAck(FrameOf(Packet(0x20, "\x00\x00\x00\x00"s)), connack).ok());
  SubAck suback;
  EXPECT_FALSE(ParseSubAck(FrameOf(Packet(0x92, "\x00\x01\x00\x01"s)), suback).ok());
  Disconnect disconnect;
  EXPECT_FALSE(ParseDisconnect(FrameOf(Packet(0xE1, ""s)), disconnect).ok());
  EXPECT_FALSE(ParseDisconnect(FrameOf(Packet(0xE0, "\x00\x00\x00"s)), disconnect).ok());
  EXPECT_TRUE(ParsePingResp(FrameOf(Packet(0xD0, ""s))).ok());
  EXPECT_FALSE(ParsePingResp(FrameOf(Packet(0xD0, "x"s))).ok());
  EXPECT_FALSE(ParsePingResp(FrameOf(Packet(0xD1, ""s))).ok());
}

TEST(Mqtt5PacketsTest, DisconnectForms) {
  Disconnect disconnect;
  ASSERT_TRUE(ParseDisconnect(FrameOf(Packet(0xE0, "")), disconnect).ok());
  EXPECT_EQ(disconnect.reason_code, 0);
  ASSERT_TRUE(ParseDisconnect(FrameOf(Packet(0xE0, "\x8E"s)), disconnect).ok());
  EXPECT_EQ(disconnect.reason_code, 0x8E);
  ASSERT_TRUE(
      ParseDisconnect(FrameOf(Packet(0xE0, "\x8B\x06\x1F"s + Str("bye"))), disconnect).ok());
  EXPECT_EQ(disconnect.reason_code, 0x8B);
  EXPECT_EQ(disconnect.reason_string, "bye");
}

TEST(Mqtt5PacketsTest, PacketTypeNames) {
  EXPECT_EQ(PacketTypeName(0x30), "PUBLISH");
  EXPECT_EQ(PacketTypeName(0x50), "PUBREC");
  EXPECT_EQ(PacketTypeName(0x00), "type 0");
  EXPECT_EQ(PacketTypeName(0xF0), "AUTH");
}

}  // namespace
}  // namespace mmi::transport::internal::mqtt5
