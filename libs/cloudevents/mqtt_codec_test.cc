#include "libs/cloudevents/mqtt_codec.h"

#include <algorithm>
#include <string>

#include "gtest/gtest.h"
#include "libs/cloudevents/internal/test_samples.h"
#include "libs/cloudevents/json_format.h"
#include "nlohmann/json.hpp"

namespace mmi::cloudevents {
namespace {

using testing::EventSampleNames;
using testing::ReadSample;

Event SampleEvent(const std::string& name) {
  auto event = DecodeStructuredJson(ReadSample(name));
  EXPECT_TRUE(event.ok()) << name << ": " << event.status();
  return event.ok() ? *event : Event{};
}

const std::string* Property(const MqttMessage& message, std::string_view name) {
  const auto it = std::find_if(message.user_properties.begin(), message.user_properties.end(),
                               [&](const auto& property) { return property.first == name; });
  return it == message.user_properties.end() ? nullptr : &it->second;
}

MqttMessage MinimalBinaryMessage() {
  MqttMessage message;
  message.user_properties = {{"ce-specversion", "1.0"},
                             {"ce-id", "1"},
                             {"ce-source", "maestro"},
                             {"ce-type", std::string(kSpecCreateRequestType)}};
  return message;
}

TEST(MqttCodecTest, EncodesBinaryModeWithCePrefixedUserProperties) {
  // The §3.4 example: Maestro sending a spec to cluster1.
  const Event event = SampleEvent("cloudevents.spec.maestro.json");
  auto message = EncodeMqtt(event);
  ASSERT_TRUE(message.ok()) << message.status();
  EXPECT_EQ(message->content_type, "application/json");
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"ce-specversion", "1.0"},
      {"ce-id", "b1a179c5-537e-4f3f-9c0c-6fbb27eb66f9"},
      {"ce-source", "maestro"},
      {"ce-type", std::string(kSpecCreateRequestType)},
      {"ce-time", "2025-12-16T06:00:17.771003Z"},
      {"ce-clustername", "7ff1a8f4-8811-49b4-8c19-9271bc51975e"},
      {"ce-logtracing", "{}"},
      {"ce-metadata", *event.MetadataJson()},
      {"ce-originalsource", ""},
      {"ce-resourceid", "55c61e54-a3f6-563d-9fec-b1fe297bdfdb"},
      {"ce-resourceversion", "1"},
  };
  EXPECT_EQ(message->user_properties, expected);
  EXPECT_EQ(message->payload, *event.data);
  EXPECT_EQ(nlohmann::json::parse(message->payload),
            nlohmann::json::parse(ReadSample("cloudevents.spec.maestro.json"))["data"]);
}

TEST(MqttCodecTest, BinaryRoundTripTurnsExtensionsIntoStringsThatAccessorsAccept) {
  for (const auto& name : EventSampleNames()) {
    SCOPED_TRACE(name);
    const Event event = SampleEvent(name);
    auto message = EncodeMqtt(event);
    ASSERT_TRUE(message.ok()) << message.status();
    auto decoded = DecodeMqtt(*message);
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    EXPECT_EQ(decoded->id, event.id);
    EXPECT_EQ(decoded->source, event.source);
    EXPECT_EQ(decoded->type, event.type);
    EXPECT_EQ(decoded->time, event.time);
    EXPECT_EQ(decoded->data_content_type, event.data_content_type);
    EXPECT_EQ(decoded->data, event.data);
    EXPECT_EQ(decoded->extensions.size(), event.extensions.size());
    EXPECT_EQ(std::get<std::string>(*decoded->FindExtension(kExtResourceVersion)),
              std::to_string(*event.ResourceVersion()));
    EXPECT_EQ(*decoded->ResourceVersion(), *event.ResourceVersion());
    EXPECT_EQ(*decoded->MetadataJson(), *event.MetadataJson());
    // Encoding the decoded event gives the same message again.
    auto again = EncodeMqtt(*decoded);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(*again, *message);
  }
}

TEST(MqttCodecTest, StructuredModeRoundTripKeepsTypes) {
  for (const auto& name : EventSampleNames()) {
    SCOPED_TRACE(name);
    const Event event = SampleEvent(name);
    auto message = EncodeMqtt(event, MqttContentMode::kStructured);
    ASSERT_TRUE(message.ok()) << message.status();
    EXPECT_EQ(message->content_type, "application/cloudevents+json");
    EXPECT_TRUE(message->user_properties.empty());
    auto decoded = DecodeMqtt(*message);
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    EXPECT_EQ(*decoded, event);
  }
}

// A fuzzer finding (2026-11-28): binary mode carries JSON data unchecked, so data with a NUL
// byte after the JSON value decodes; structured mode must refuse it (nlohmann alone would accept
// the value before the NUL and the encoding would embed the rest) rather than write an event
// nobody can read.
TEST(MqttCodecTest, StructuredModeRefusesJsonDataFollowedByANulByte) {
  Event event = SampleEvent("cloudevents.spec.maestro.json");
  auto message = EncodeMqtt(event);
  ASSERT_TRUE(message.ok()) << message.status();
  message->payload.push_back('\0');
  auto decoded = DecodeMqtt(*message);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  auto structured = EncodeMqtt(*decoded, MqttContentMode::kStructured);
  EXPECT_EQ(structured.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(structured.status().message().find("NUL byte"), std::string_view::npos)
      << structured.status();
}

TEST(MqttCodecTest, EventWithoutDataHasEmptyPayloadAndNoContentType) {
  auto event = DecodeStructuredJson(testing::kDeleteRequestJson);
  ASSERT_TRUE(event.ok());
  auto message = EncodeMqtt(*event);
  ASSERT_TRUE(message.ok());
  EXPECT_TRUE(message->payload.empty());
  EXPECT_FALSE(message->content_type.has_value());
  EXPECT_EQ(*Property(*message, "ce-deletiontimestamp"), "2026-06-02T08:00:00.412345678Z");
  auto decoded = DecodeMqtt(*message);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_FALSE(decoded->data.has_value());
  EXPECT_EQ(FormatTimestamp(*decoded->DeletionTimestamp()), "2026-06-02T08:00:00.412345678Z");
}

TEST(MqttCodecTest, DecodingIgnoresOtherPropertiesAndMatchesNamesCaseInsensitively) {
  MqttMessage message = MinimalBinaryMessage();
  message.user_properties.emplace_back("trace", "abc");
  message.user_properties.emplace_back("CE-ClusterName", "cluster1");
  message.content_type = "application/json";
  message.payload = "{}";
  auto event = DecodeMqtt(message);
  ASSERT_TRUE(event.ok()) << event.status();
  EXPECT_EQ(*event->ClusterName(), "cluster1");
  EXPECT_FALSE(event->HasExtension("trace"));
  EXPECT_EQ(event->extensions.size(), 1U);
  EXPECT_EQ(event->data, "{}");
}

TEST(MqttCodecTest, RejectsMessagesThatAreNotBinaryModeCloudEvents) {
  const auto with = [](auto mutate) {
    MqttMessage message = MinimalBinaryMessage();
    mutate(message);
    return DecodeMqtt(message).status();
  };
  const std::pair<absl::Status, const char*> cases[] = {
      {DecodeMqtt(MqttMessage{"{}", std::nullopt, {}}).status(), "ce-specversion"},
      {DecodeMqtt(MqttMessage{"{}", "application/json", {{"ce-id", "1"}}}).status(),
       "ce-specversion"},
      {with([](MqttMessage& m) { m.user_properties[0].second = "0.3"; }), "ce-specversion"},
      {with([](MqttMessage& m) { m.user_properties.erase(m.user_properties.begin() + 1); }),
       "ce-id"},
      {with([](MqttMessage& m) { m.user_properties[2].second.clear(); }), "ce-source"},
      {with([](MqttMessage& m) { m.user_properties.pop_back(); }), "ce-type"},
      {with([](MqttMessage& m) { m.user_properties.emplace_back("ce-time", "noon"); }), "ce-time"},
      {with([](MqttMessage& m) { m.user_properties.emplace_back("ce-ID", "2"); }),
       "more than once"},
      {with([](MqttMessage& m) { m.user_properties.emplace_back("ce-bad_name", "x"); }),
       "ce-bad_name"},
      {with([](MqttMessage& m) { m.user_properties.emplace_back("ce-x", "\xc3"); }), "UTF-8"},
      {with([](MqttMessage& m) {
         m.content_type = "application/json";
         m.user_properties.emplace_back("ce-datacontenttype", "text/plain");
       }),
       "contradicts"},
      {DecodeMqtt(MqttMessage{"{", "application/cloudevents+json", {}}).status(), "not valid JSON"},
  };
  for (const auto& [status, needle] : cases) {
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    EXPECT_NE(std::string(status.message()).find(needle), std::string::npos) << status;
  }
}

TEST(MqttCodecTest, StructuredContentTypeCannotTravelInBinaryMode) {
  MqttMessage message = MinimalBinaryMessage();
  message.user_properties.emplace_back("ce-datacontenttype", "application/cloudevents+json");
  EXPECT_EQ(DecodeMqtt(message).status().code(), absl::StatusCode::kInvalidArgument);
  Event event;
  event.id = "1";
  event.source = "s";
  event.type = "t";
  event.data_content_type = "application/cloudevents+json";
  event.data = "{}";
  EXPECT_EQ(EncodeMqtt(event).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(EncodeMqtt(event, MqttContentMode::kStructured).ok());
}

TEST(MqttCodecTest, EnforcesTheSizeLimitBothWays) {
  CodecLimits limits;
  limits.max_event_bytes = 200;
  MqttMessage message = MinimalBinaryMessage();
  message.payload = std::string(300, 'x');
  EXPECT_EQ(DecodeMqtt(message, limits).status().code(), absl::StatusCode::kInvalidArgument);
  const Event event = SampleEvent("cloudevents.status.maestro.json");
  EXPECT_EQ(EncodeMqtt(event, MqttContentMode::kBinary, limits).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(EncodeMqtt(event, MqttContentMode::kStructured, limits).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(MqttCodecTest, RefusesToEncodeInvalidEvents) {
  Event event;
  event.id = "1";
  event.source = "s";
  event.type = "t";
  event.SetString("Bad-Name", "x");
  EXPECT_EQ(EncodeMqtt(event).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace mmi::cloudevents
