#include "libs/transport/mqtt/mqtt_topics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace mmi::transport {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

MqttSettings Settings() {
  MqttSettings s;
  s.broker_host = "127.0.0.1:1883";
  s.source_id = "mmi";
  return s;
}

cloudevents::Event Event(std::string_view type, std::optional<std::string> cluster) {
  cloudevents::Event event;
  event.id = "e1";
  event.source = "mmi";
  event.type = std::string(type);
  if (cluster.has_value()) {
    event.SetString(cloudevents::kExtClusterName, *cluster);
  }
  return event;
}

TEST(MqttTopicsTest, SpecEventsGoToTheClustersSourceEventsTopic) {
  MqttTopics topics(Settings());
  auto topic = topics.PublishTopic(Event(cloudevents::kSpecCreateRequestType, "cluster1"));
  ASSERT_TRUE(topic.ok()) << topic.status();
  EXPECT_EQ(*topic, "sources/mmi/consumers/cluster1/sourceevents");
}

TEST(MqttTopicsTest, PerClusterStatusResyncUsesTheSourceEventsTopic) {
  MqttTopics topics(Settings());
  auto topic = topics.PublishTopic(Event(cloudevents::kStatusResyncRequestType, "cluster-2"));
  ASSERT_TRUE(topic.ok()) << topic.status();
  EXPECT_EQ(*topic, "sources/mmi/consumers/cluster-2/sourceevents");
}

TEST(MqttTopicsTest, StatusResyncForAllClustersUsesSourceBroadcast) {
  MqttSettings s = Settings();
  s.topics.source_broadcast = "sources/+/sourcebroadcast";
  MqttTopics topics(s);
  auto topic = topics.PublishTopic(Event(cloudevents::kStatusResyncRequestType, ""));
  ASSERT_TRUE(topic.ok()) << topic.status();
  EXPECT_EQ(*topic, "sources/mmi/sourcebroadcast");
}

TEST(MqttTopicsTest, BroadcastWithoutSourceBroadcastTopicIsAFailedPrecondition) {
  MqttTopics topics(Settings());
  auto topic = topics.PublishTopic(Event(cloudevents::kStatusResyncRequestType, ""));
  EXPECT_EQ(topic.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(topic.status().message()), HasSubstr("sourceBroadcast"));
}

TEST(MqttTopicsTest, RejectsEventsWithoutAUsableClusterName) {
  MqttTopics topics(Settings());
  EXPECT_EQ(
      topics.PublishTopic(Event(cloudevents::kSpecCreateRequestType, std::nullopt)).status().code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(topics.PublishTopic(Event(cloudevents::kSpecCreateRequestType, "")).status().code(),
            absl::StatusCode::kInvalidArgument);
  for (const char* bad : {"Cluster1", "a/b", "+", "#", "a.b"}) {
    EXPECT_EQ(topics.PublishTopic(Event(cloudevents::kSpecCreateRequestType, bad)).status().code(),
              absl::StatusCode::kInvalidArgument)
        << bad;
  }
}

TEST(MqttTopicsTest, SubscribesAgentEventsAndOptionalAgentBroadcast) {
  MqttSettings s = Settings();
  EXPECT_THAT(MqttTopics(s).SubscriptionFilters(),
              ElementsAre("$share/statussubscribers/sources/mmi/consumers/+/agentevents"));
  s.topics.agent_broadcast = "clusters/+/agentbroadcast";
  EXPECT_THAT(MqttTopics(s).SubscriptionFilters(),
              ElementsAre("$share/statussubscribers/sources/mmi/consumers/+/agentevents",
                          "clusters/+/agentbroadcast"));
}

}  // namespace
}  // namespace mmi::transport
