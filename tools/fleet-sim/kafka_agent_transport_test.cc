// Settings checks of the Kafka agent transport (no broker; the broker round trip is
// tests/integration/fleet_sim/).
#include "tools/fleet-sim/kafka_agent_transport.h"

#include <gtest/gtest.h>

namespace mmi::fleet_sim {
namespace {

TEST(KafkaAgentSettingsTest, RequiresBootstrapServersAndAKnownOffsetReset) {
  KafkaAgentSettings settings;
  EXPECT_EQ(ValidateKafkaAgentSettings(settings).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(ValidateKafkaAgentSettings(settings).message().find("kafka.bootstrapServers"),
            std::string::npos);
  settings.bootstrap_servers = "127.0.0.1:9092";
  EXPECT_TRUE(ValidateKafkaAgentSettings(settings).ok());
  settings.auto_offset_reset = "smallest";
  EXPECT_NE(ValidateKafkaAgentSettings(settings).message().find("kafka.autoOffsetReset"),
            std::string::npos);
}

TEST(KafkaAgentSettingsTest, DefaultsFollowTheFinalOcmScheme) {
  const KafkaAgentSettings settings;
  EXPECT_EQ(settings.source_events_topic, "sourceevents");
  EXPECT_EQ(settings.agent_events_topic, "agentevents");
  EXPECT_EQ(settings.auto_offset_reset, "earliest");
}

TEST(KafkaAgentTransportTest, PublishBeforeStartFailsWithUnavailable) {
  KafkaAgentSettings settings;
  settings.bootstrap_servers = "127.0.0.1:9";
  KafkaAgentTransport transport(settings);
  cloudevents::Event event;
  event.id = "e1";
  event.source = "c1-work-agent";
  event.type = std::string(cloudevents::kStatusUpdateRequestType);
  event.SetString(cloudevents::kExtClusterName, "c1");
  absl::Status result;
  transport.Publish(event, [&result](absl::Status status) { result = status; });
  EXPECT_EQ(result.code(), absl::StatusCode::kUnavailable);
  EXPECT_FALSE(transport.connected());
}

}  // namespace
}  // namespace mmi::fleet_sim
