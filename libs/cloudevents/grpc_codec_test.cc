#include "libs/cloudevents/grpc_codec.h"

#include <string>

#include "gtest/gtest.h"
#include "libs/cloudevents/internal/test_samples.h"
#include "libs/cloudevents/json_format.h"
#include "nlohmann/json.hpp"

namespace mmi::cloudevents {
namespace {

namespace pb = ::io::cloudevents::v1;
using testing::EventSampleNames;
using testing::ReadSample;

Event SampleEvent(const std::string& name) {
  auto event = DecodeStructuredJson(ReadSample(name));
  EXPECT_TRUE(event.ok()) << name << ": " << event.status();
  return event.ok() ? *event : Event{};
}

// The §2.6 / §4.4 example attributes, with a trivial bundle.
Event CreateRequest() {
  Event event;
  event.id = "5f0c3c1e-8d4b-4a51-9a53-3b0b8f6d2c11";
  event.source = "app-work-client";
  event.type = std::string(kSpecCreateRequestType);
  event.data_content_type = "application/json";
  event.time = *ParseTimestamp("2026-06-01T10:00:00.123456789Z");
  event.SetString(kExtClusterName, "cluster1");
  event.SetString(kExtResourceId, "278f3a61-efe5-56de-abba-6aedbfcce272");
  event.SetInteger(kExtResourceVersion, 0);
  event.SetString(kExtMetadata, R"({"name":"openshift-gitops-guestbook-cluster1"})");
  event.SetString(kExtLogTracing, "{}");
  event.SetString(kExtOriginalSource, "");
  event.data = R"({"manifests":[]})";
  return event;
}

pb::CloudEvent MinimalMessage() {
  pb::CloudEvent message;
  message.set_id("1");
  message.set_source("maestro");
  message.set_spec_version("1.0");
  message.set_type(std::string(kStatusUpdateRequestType));
  (*message.mutable_attributes())["ce-resourceid"].set_ce_string("r1");
  return message;
}

TEST(GrpcCodecTest, EncodesWithOcmAttributeKeys) {
  auto message = EncodeGrpc(CreateRequest());
  ASSERT_TRUE(message.ok()) << message.status();
  EXPECT_EQ(message->id(), "5f0c3c1e-8d4b-4a51-9a53-3b0b8f6d2c11");
  EXPECT_EQ(message->source(), "app-work-client");
  EXPECT_EQ(message->spec_version(), "1.0");
  EXPECT_EQ(message->type(), kSpecCreateRequestType);
  const auto& attributes = message->attributes();
  EXPECT_EQ(attributes.size(), 8U);
  EXPECT_EQ(attributes.at("contenttype").ce_string(), "application/json");
  EXPECT_FALSE(attributes.contains("datacontenttype"));
  EXPECT_FALSE(attributes.contains("ce-datacontenttype"));
  ASSERT_EQ(attributes.at("ce-time").attr_case(), pb::CloudEventAttributeValue::kCeTimestamp);
  EXPECT_EQ(attributes.at("ce-time").ce_timestamp().seconds(), 1780308000);
  EXPECT_EQ(attributes.at("ce-time").ce_timestamp().nanos(), 123456789);
  EXPECT_EQ(attributes.at("ce-clustername").ce_string(), "cluster1");
  EXPECT_EQ(attributes.at("ce-resourceid").ce_string(), "278f3a61-efe5-56de-abba-6aedbfcce272");
  ASSERT_EQ(attributes.at("ce-resourceversion").attr_case(),
            pb::CloudEventAttributeValue::kCeInteger);
  EXPECT_EQ(attributes.at("ce-resourceversion").ce_integer(), 0);
  EXPECT_EQ(attributes.at("ce-logtracing").ce_string(), "{}");
  ASSERT_EQ(attributes.at("ce-originalsource").attr_case(),
            pb::CloudEventAttributeValue::kCeString);
  EXPECT_EQ(attributes.at("ce-originalsource").ce_string(), "");
  ASSERT_EQ(message->data_case(), pb::CloudEvent::kBinaryData);
  EXPECT_EQ(message->binary_data(), R"({"manifests":[]})");
}

TEST(GrpcCodecTest, EmptyOriginalSourceIsSerializedAsPresentEmptyString) {
  auto message = EncodeGrpc(CreateRequest());
  ASSERT_TRUE(message.ok());
  std::string bytes;
  ASSERT_TRUE(message->SerializeToString(&bytes));
  pb::CloudEvent parsed;
  ASSERT_TRUE(parsed.ParseFromString(bytes));
  EXPECT_EQ(parsed.attributes().at("ce-originalsource").attr_case(),
            pb::CloudEventAttributeValue::kCeString);
}

TEST(GrpcCodecTest, TimestampExtensionsUseCeTimestamp) {
  Event event = CreateRequest();
  event.type = std::string(kSpecDeleteRequestType);
  event.SetTimestamp(kExtDeletionTimestamp, *ParseTimestamp("1969-12-31T23:59:59.25Z"));
  auto message = EncodeGrpc(event);
  ASSERT_TRUE(message.ok());
  const auto& value = message->attributes().at("ce-deletiontimestamp");
  ASSERT_EQ(value.attr_case(), pb::CloudEventAttributeValue::kCeTimestamp);
  EXPECT_EQ(value.ce_timestamp().seconds(), -1);
  EXPECT_EQ(value.ce_timestamp().nanos(), 250000000);
  auto decoded = DecodeGrpc(*message);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(*decoded, event);
}

// Found by grpc_fuzzer: an event without datacontenttype, time or extensions must not encode to
// an empty attributes map, which readers take for "not a CloudEvent".
TEST(GrpcCodecTest, MinimalEventStaysDecodable) {
  Event event;
  event.id = "1";
  event.source = "s";
  event.type = std::string(kStatusUpdateRequestType);
  auto message = EncodeGrpc(event);
  ASSERT_TRUE(message.ok()) << message.status();
  EXPECT_EQ(message->attributes().at("ce-specversion").ce_string(), "1.0");
  auto decoded = DecodeGrpc(*message);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(*decoded, event);
}

TEST(GrpcCodecTest, RoundTripsEverySampleThroughSerializedBytes) {
  for (const auto& name : EventSampleNames()) {
    SCOPED_TRACE(name);
    const Event event = SampleEvent(name);
    auto message = EncodeGrpc(event);
    ASSERT_TRUE(message.ok()) << message.status();
    std::string bytes;
    ASSERT_TRUE(message->SerializeToString(&bytes));
    auto decoded = DecodeGrpcBytes(bytes);
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    EXPECT_EQ(*decoded, event);
  }
}

TEST(GrpcCodecTest, AcceptsResourceVersionAndTimeAsStrings) {
  pb::CloudEvent message = MinimalMessage();
  auto& attributes = *message.mutable_attributes();
  attributes["ce-resourceversion"].set_ce_string("5");
  attributes["ce-time"].set_ce_string("2026-06-01T10:00:05.123456789Z");
  attributes["ce-deletiontimestamp"].set_ce_string("2026-06-02T08:00:00Z");
  attributes["ce-link"].set_ce_uri("https://example.com/x");
  attributes["ce-ref"].set_ce_uri_ref("/x");
  attributes["ce-flag"].set_ce_boolean(true);
  attributes["ce-blob"].set_ce_bytes(std::string("\x00\x01", 2));
  auto event = DecodeGrpc(message);
  ASSERT_TRUE(event.ok()) << event.status();
  EXPECT_EQ(*event->ResourceVersion(), 5);
  EXPECT_EQ(FormatTimestamp(*event->time), "2026-06-01T10:00:05.123456789Z");
  EXPECT_EQ(FormatTimestamp(*event->DeletionTimestamp()), "2026-06-02T08:00:00Z");
  EXPECT_EQ(*event->GetString("link"), "https://example.com/x");
  EXPECT_EQ(*event->GetString("ref"), "/x");
  EXPECT_TRUE(*event->GetBoolean("flag"));
  EXPECT_EQ(std::get<Binary>(*event->FindExtension("blob")).bytes, std::string("\x00\x01", 2));
  EXPECT_FALSE(event->data.has_value());
}

TEST(GrpcCodecTest, IgnoresUnprefixedKeysAndTextData) {
  pb::CloudEvent message = MinimalMessage();
  (*message.mutable_attributes())["clustername"].set_ce_string("cluster1");
  message.set_text_data("{\"ignored\":true}");
  auto event = DecodeGrpc(message);
  ASSERT_TRUE(event.ok()) << event.status();
  EXPECT_FALSE(event->HasExtension(kExtClusterName));
  EXPECT_FALSE(event->data.has_value());
}

TEST(GrpcCodecTest, DecodesStructuredMode) {
  pb::CloudEvent message;
  (*message.mutable_attributes())["contenttype"].set_ce_string("application/cloudevents+json");
  message.set_binary_data(ReadSample("cloudevents.agent.json"));
  auto event = DecodeGrpc(message);
  ASSERT_TRUE(event.ok()) << event.status();
  EXPECT_EQ(*event, SampleEvent("cloudevents.agent.json"));
}

TEST(GrpcCodecTest, RecognisesHeartbeatsBeforeDecoding) {
  const pb::CloudEvent heartbeat = MakeHeartbeat("hb-1");
  EXPECT_TRUE(IsHeartbeat(heartbeat));
  EXPECT_TRUE(heartbeat.attributes().empty());
  EXPECT_EQ(heartbeat.spec_version(), "1.0");
  EXPECT_TRUE(heartbeat.source().empty());
  auto event = DecodeGrpc(heartbeat);
  ASSERT_TRUE(event.ok()) << event.status();
  EXPECT_TRUE(event->IsHeartbeat());
  EXPECT_EQ(event->id, "hb-1");
  auto encoded = EncodeGrpc(*event);
  ASSERT_TRUE(encoded.ok()) << encoded.status();
  EXPECT_TRUE(IsHeartbeat(*encoded));
  EXPECT_TRUE(encoded->attributes().empty());
  EXPECT_FALSE(IsHeartbeat(MinimalMessage()));
}

TEST(GrpcCodecTest, RejectsMalformedMessagesWithInvalidArgument) {
  const auto with = [](auto mutate) {
    pb::CloudEvent message = MinimalMessage();
    mutate(message);
    return DecodeGrpc(message).status();
  };
  const std::pair<absl::Status, const char*> cases[] = {
      {with([](pb::CloudEvent& m) { m.mutable_attributes()->clear(); }), "empty attributes"},
      {with([](pb::CloudEvent& m) { m.set_spec_version(""); }), "spec_version"},
      {with([](pb::CloudEvent& m) { m.set_spec_version("0.3"); }), "spec_version"},
      {with([](pb::CloudEvent& m) { m.set_id(""); }), "empty id"},
      {with([](pb::CloudEvent& m) { m.set_source(""); }), "empty source"},
      {with([](pb::CloudEvent& m) { m.set_type(""); }), "empty type"},
      {with([](pb::CloudEvent& m) { (*m.mutable_attributes())["ce-x"]; }), "ce-x"},
      {with([](pb::CloudEvent& m) { (*m.mutable_attributes())["ce-bad_name"].set_ce_string(""); }),
       "ce-bad_name"},
      {with([](pb::CloudEvent& m) { (*m.mutable_attributes())["ce-time"].set_ce_integer(5); }),
       "ce-time"},
      {with([](pb::CloudEvent& m) { (*m.mutable_attributes())["ce-time"].set_ce_string("x"); }),
       "ce-time"},
      {with([](pb::CloudEvent& m) {
         (*m.mutable_attributes())["ce-time"].mutable_ce_timestamp()->set_nanos(-1);
       }),
       "ce-time"},
      {with([](pb::CloudEvent& m) {
         (*m.mutable_attributes())["ce-time"].mutable_ce_timestamp()->set_seconds(std::int64_t{1}
                                                                                  << 40);
       }),
       "ce-time"},
      {with([](pb::CloudEvent& m) { (*m.mutable_attributes())["contenttype"].set_ce_integer(1); }),
       "contenttype"},
      {with([](pb::CloudEvent& m) {
         (*m.mutable_attributes())["contenttype"].set_ce_string("application/json");
         (*m.mutable_attributes())["ce-datacontenttype"].set_ce_string("application/json");
       }),
       "both"},
      {with([](pb::CloudEvent& m) {
         (*m.mutable_attributes())["ce-a"].set_ce_string("1");
         (*m.mutable_attributes())["CE-A"].set_ce_string("2");
       }),
       "more than once"},
      {with([](pb::CloudEvent& m) { (*m.mutable_attributes())["ce-x"].set_ce_string("\xff"); }),
       "UTF-8"},
      {with([](pb::CloudEvent& m) { m.set_id("\xc3"); }), "UTF-8"},
      {with([](pb::CloudEvent& m) {
         (*m.mutable_attributes())["contenttype"].set_ce_string("application/cloudevents+json");
         m.set_binary_data("{");
       }),
       "not valid JSON"},
  };
  for (const auto& [status, needle] : cases) {
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    EXPECT_NE(std::string(status.message()).find(needle), std::string::npos) << status;
  }
}

TEST(GrpcCodecTest, RejectsBytesThatAreNotACloudEvent) {
  EXPECT_EQ(DecodeGrpcBytes("\xff\xff\xff").status().code(), absl::StatusCode::kInvalidArgument);
  // Field 1 (id) declared with an invalid UTF-8 payload: proto3 parsing refuses it.
  EXPECT_EQ(DecodeGrpcBytes(std::string("\x0a\x01\xff", 3)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DecodeGrpcBytes("").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(GrpcCodecTest, EnforcesTheSizeLimit) {
  CodecLimits limits;
  limits.max_event_bytes = 64;
  Event event = CreateRequest();
  EXPECT_EQ(EncodeGrpc(event, limits).status().code(), absl::StatusCode::kInvalidArgument);
  pb::CloudEvent message = MinimalMessage();
  message.set_binary_data(std::string(100, 'x'));
  EXPECT_EQ(DecodeGrpc(message, limits).status().code(), absl::StatusCode::kInvalidArgument);
  std::string bytes;
  ASSERT_TRUE(message.SerializeToString(&bytes));
  EXPECT_EQ(DecodeGrpcBytes(bytes, limits).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace mmi::cloudevents
