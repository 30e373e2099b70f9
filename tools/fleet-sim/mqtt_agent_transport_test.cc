// Pure parts of the MQTT agent transport: topic routing and settings (no broker; the broker
// round trip is tests/integration/fleet_sim/).
#include "tools/fleet-sim/mqtt_agent_transport.h"

#include <gtest/gtest.h>

namespace mmi::fleet_sim {
namespace {

TEST(MqttAgentTopicsTest, ClusterComesFromTheWildcardSegment) {
  const std::string filter = "sources/mmi/consumers/+/sourceevents";
  EXPECT_EQ(ClusterFromTopic(filter, "sources/mmi/consumers/cluster-7/sourceevents"), "cluster-7");
  EXPECT_EQ(ClusterFromTopic(filter, "sources/other/consumers/cluster-7/sourceevents"), "");
  EXPECT_EQ(ClusterFromTopic(filter, "sources/mmi/consumers/cluster-7/agentevents"), "");
  EXPECT_EQ(ClusterFromTopic("sources/mmi/sourcebroadcast", "sources/mmi/sourcebroadcast"), "");
  EXPECT_EQ(ClusterFromTopic("$share/g/sources/mmi/consumers/+/sourceevents",
                             "sources/mmi/consumers/c1/sourceevents"),
            "c1");
}

TEST(MqttAgentTopicsTest, AgentEventsTopicFillsClusterThenSource) {
  EXPECT_EQ(AgentEventsTopic("sources/mmi/consumers/+/agentevents", "c1", "mmi"),
            "sources/mmi/consumers/c1/agentevents");
  EXPECT_EQ(AgentEventsTopic("sources/+/consumers/+/agentevents", "c1", "maestro"),
            "sources/maestro/consumers/c1/agentevents");
}

TEST(MqttAgentSettingsTest, DefaultsFollowMaestrosTopicScheme) {
  MqttAgentSettings settings;
  settings.broker_host = "127.0.0.1:1883";
  settings.source_id = "app-work-client";
  const MqttAgentSettings resolved = ResolvedMqttAgentSettings(settings);
  EXPECT_EQ(resolved.source_events, "sources/app-work-client/consumers/+/sourceevents");
  EXPECT_EQ(resolved.agent_events, "sources/app-work-client/consumers/+/agentevents");
  EXPECT_EQ(resolved.source_broadcast, "sources/app-work-client/sourcebroadcast");
  EXPECT_EQ(resolved.client_id.rfind("fleet-sim-", 0), 0u);
  EXPECT_TRUE(ValidateMqttAgentSettings(settings).ok());
}

TEST(MqttAgentSettingsTest, RejectsUnusableSettingsNamingTheField) {
  MqttAgentSettings settings;
  settings.broker_host = "broker";
  settings.source_id = "app-work-client";
  EXPECT_EQ(ValidateMqttAgentSettings(settings).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(ValidateMqttAgentSettings(settings).message().find("mqtt.brokerHost"),
            std::string::npos);
  settings.broker_host = "127.0.0.1:1883";
  settings.source_id = "App_Work";
  EXPECT_NE(ValidateMqttAgentSettings(settings).message().find("mqtt.sourceId"), std::string::npos);
}

}  // namespace
}  // namespace mmi::fleet_sim
