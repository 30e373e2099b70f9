#include "libs/cloudevents/kafka_codec.h"

#include <string>

#include "gtest/gtest.h"
#include "libs/cloudevents/internal/test_samples.h"
#include "libs/cloudevents/json_format.h"

namespace mmi::cloudevents {
namespace {

using testing::EventSampleNames;
using testing::ReadSample;

Event SampleEvent(const std::string& name) {
  auto event = DecodeStructuredJson(ReadSample(name));
  EXPECT_TRUE(event.ok()) << name << ": " << event.status();
  return event.ok() ? *event : Event{};
}

EventType Type(std::string_view text) { return *EventType::Parse(text); }

TEST(KafkaSchemeTest, SourcesProduceToSourceEventsAndAgentsToAgentEvents) {
  EXPECT_EQ(KafkaTopicFor(Type(kSpecCreateRequestType)), "sourceevents");
  EXPECT_EQ(KafkaTopicFor(Type(kSpecUpdateRequestType)), "sourceevents");
  EXPECT_EQ(KafkaTopicFor(Type(kSpecDeleteRequestType)), "sourceevents");
  EXPECT_EQ(KafkaTopicFor(Type(kSpecResyncResponseType)), "sourceevents");
  EXPECT_EQ(KafkaTopicFor(Type(kStatusResyncRequestType)), "sourceevents");
  EXPECT_EQ(KafkaTopicFor(Type(kStatusUpdateRequestType)), "agentevents");
  EXPECT_EQ(KafkaTopicFor(Type(kStatusResyncResponseType)), "agentevents");
  EXPECT_EQ(KafkaTopicFor(Type(kSpecResyncRequestType)), "agentevents");

  EXPECT_EQ(KafkaProduceTopic(KafkaRole::kSource), "sourceevents");
  EXPECT_EQ(KafkaConsumeTopic(KafkaRole::kSource), "agentevents");
  EXPECT_EQ(KafkaProduceTopic(KafkaRole::kAgent), "agentevents");
  EXPECT_EQ(KafkaConsumeTopic(KafkaRole::kAgent), "sourceevents");
  EXPECT_EQ(KafkaDefaultGroupId("app-work-client"), "app-work-client");
}

TEST(KafkaCodecTest, EncodesBinaryModeWithoutKey) {
  const Event event = SampleEvent("cloudevents.grpcclient.json");
  auto record = EncodeKafka(event);
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_EQ(record->topic, "sourceevents");
  EXPECT_FALSE(record->key.has_value());
  EXPECT_EQ(record->value, *event.data);
  ASSERT_FALSE(record->headers.empty());
  EXPECT_EQ(record->headers[0],
            (std::pair<std::string, std::string>{"content-type", "application/json"}));
  EXPECT_EQ(record->headers[1], (std::pair<std::string, std::string>{"ce-specversion", "1.0"}));
  bool saw_version = false;
  for (const auto& [name, value] : record->headers) {
    EXPECT_TRUE(name == "content-type" || name.starts_with("ce-")) << name;
    if (name == "ce-resourceversion") {
      saw_version = true;
      EXPECT_EQ(value, "0");
    }
  }
  EXPECT_TRUE(saw_version);
}

TEST(KafkaCodecTest, StatusEventsGoToAgentEvents) {
  auto record = EncodeKafka(SampleEvent("cloudevents.agent.json"));
  ASSERT_TRUE(record.ok());
  EXPECT_EQ(record->topic, "agentevents");
}

TEST(KafkaCodecTest, RoundTripsEverySample) {
  for (const auto& name : EventSampleNames()) {
    SCOPED_TRACE(name);
    const Event event = SampleEvent(name);
    auto record = EncodeKafka(event);
    ASSERT_TRUE(record.ok()) << record.status();
    auto decoded = DecodeKafka(*record);
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    EXPECT_EQ(decoded->id, event.id);
    EXPECT_EQ(decoded->time, event.time);
    EXPECT_EQ(decoded->data, event.data);
    EXPECT_EQ(decoded->data_content_type, event.data_content_type);
    EXPECT_EQ(*decoded->ResourceVersion(), *event.ResourceVersion());
    EXPECT_EQ(*decoded->ResourceId(), *event.ResourceId());
    auto again = EncodeKafka(*decoded);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(*again, *record);
  }
}

TEST(KafkaCodecTest, DecodesMixedCaseHeadersAndStructuredMode) {
  KafkaRecord record;
  record.topic = "agentevents";
  record.headers = {{"Content-Type", "application/json"},
                    {"CE-SpecVersion", "1.0"},
                    {"ce-id", "1"},
                    {"ce-source", "agent"},
                    {"ce-type", std::string(kStatusUpdateRequestType)},
                    {"kafka_internal", "x"}};
  record.value = "{}";
  auto event = DecodeKafka(record);
  ASSERT_TRUE(event.ok()) << event.status();
  EXPECT_EQ(event->data_content_type, "application/json");
  EXPECT_TRUE(event->extensions.empty());

  KafkaRecord structured;
  structured.headers = {{"content-type", "application/cloudevents+json; charset=utf-8"}};
  structured.value = ReadSample("cloudevents.agent.json");
  auto from_structured = DecodeKafka(structured);
  ASSERT_TRUE(from_structured.ok()) << from_structured.status();
  EXPECT_EQ(*from_structured, SampleEvent("cloudevents.agent.json"));
}

TEST(KafkaCodecTest, RejectsMalformedRecords) {
  KafkaRecord no_version;
  no_version.headers = {{"ce-id", "1"}};
  EXPECT_EQ(DecodeKafka(no_version).status().code(), absl::StatusCode::kInvalidArgument);

  KafkaRecord two_types;
  two_types.headers = {{"content-type", "application/json"}, {"Content-Type", "text/plain"}};
  EXPECT_EQ(DecodeKafka(two_types).status().code(), absl::StatusCode::kInvalidArgument);

  KafkaRecord bad_time;
  bad_time.headers = {{"ce-specversion", "1.0"},
                      {"ce-id", "1"},
                      {"ce-source", "s"},
                      {"ce-type", "t"},
                      {"ce-time", "2026-06-01"}};
  auto status = DecodeKafka(bad_time).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(status.message()).find("ce-time"), std::string::npos);

  CodecLimits limits;
  limits.max_event_bytes = 10;
  KafkaRecord big;
  big.value = std::string(11, 'x');
  EXPECT_EQ(DecodeKafka(big, limits).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(KafkaCodecTest, RefusesEventsWhoseTypeDoesNotParse) {
  Event event;
  event.id = "1";
  event.source = "s";
  event.type = "not-an-ocm-type";
  EXPECT_EQ(EncodeKafka(event).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace mmi::cloudevents
