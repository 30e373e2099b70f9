#include "libs/transport/settings_yaml.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace mmi::transport {
namespace {

absl::StatusOr<TransportSettings> Read(const std::string& yaml) {
  config::YamlReader reader(yaml);
  TransportSettings out;
  ReadTransportSettings(reader.Root().Section("transport"), out);
  if (absl::Status s = reader.Finish(); !s.ok()) {
    return s;
  }
  return out;
}

TEST(ReadTransportSettingsTest, ReadsTheSectionTheTypeNames) {
  auto t = Read(R"(
transport:
  type: kafka
  mqtt: {brokerHost: "unused:1883"}
  kafka:
    bootstrapServer: k1:9092,k2:9092
    sourceId: src
    groupID: g
    keyByCluster: false
    tls: {caFile: /ca.pem}
    sasl: {mechanism: PLAIN, username: u}
    advancedConfig: {linger.ms: 5}
    deliveryTimeout: 9s
)");
  ASSERT_TRUE(t.ok()) << t.status();
  const auto* k = std::get_if<KafkaSettings>(&*t);
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->bootstrap_servers, "k1:9092,k2:9092");
  EXPECT_EQ(k->source_id, "src");
  EXPECT_EQ(k->group_id, "g");
  EXPECT_FALSE(k->key_by_cluster);
  EXPECT_TRUE(k->tls.enabled) << "a CA file implies TLS";
  EXPECT_EQ(k->sasl.username, "u");
  EXPECT_EQ(k->advanced_config.at("linger.ms"), "5");
  EXPECT_EQ(k->delivery_timeout, std::chrono::seconds(9));
}

TEST(ReadTransportSettingsTest, DefaultsToMqttAndKeepsAnExplicitTlsOff) {
  auto t = Read(R"(
transport:
  mqtt:
    brokerHost: b:8883
    keepAlive: 30s
    tls: {enabled: false, caFile: /ca.pem}
    topics: {sourceBroadcast: sources/s/sourcebroadcast}
)");
  ASSERT_TRUE(t.ok()) << t.status();
  const auto& m = std::get<MqttSettings>(*t);
  EXPECT_EQ(m.broker_host, "b:8883");
  EXPECT_EQ(m.keep_alive, std::chrono::seconds(30));
  EXPECT_FALSE(m.tls.enabled);
  EXPECT_EQ(m.topics.source_broadcast, "sources/s/sourcebroadcast");
  EXPECT_TRUE(std::holds_alternative<MqttSettings>(*Read("")));
}

// An operator upgrading from a release with the Paho client learns, at startup, which line of the
// config to delete.
TEST(ReadTransportSettingsTest, RefusesTheRemovedMqttLibrarySettingNamingIt) {
  auto t = Read(R"(
transport:
  mqtt:
    brokerHost: b:8883
    library: paho
)");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(
      std::string(t.status().message()),
      ::testing::HasSubstr("transport.mqtt.library: removed: MQTT publishes on libmosquitto"));
}

TEST(ReadTransportSettingsTest, ReportsBadValuesTypesAndUnknownKeysByPath) {
  auto t = Read(R"(
transport:
  type: pigeon
  grpc: {url: m:8090, keepAliveTime: often, tls: {caFlie: x}}
  mqtt: {brokerHots: b:1883, subQoS: high}
)");
  ASSERT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string msg(t.status().message());
  EXPECT_NE(msg.find("transport.type: must be mqtt, grpc or kafka, got 'pigeon'"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("transport.grpc.keepAliveTime: invalid duration"), std::string::npos) << msg;
  EXPECT_NE(msg.find("transport.grpc.tls.caFlie: unknown key"), std::string::npos) << msg;
  EXPECT_NE(msg.find("transport.mqtt.brokerHots: unknown key"), std::string::npos) << msg;
  EXPECT_NE(msg.find("transport.mqtt.subQoS: expected a integer, got 'high'"), std::string::npos)
      << msg;
}

TEST(ApplyTransportSecretsTest, SetsTheSecretOfTheSelectedTransportOnly) {
  TransportSettings mqtt = MqttSettings{};
  ApplyTransportSecrets(mqtt, "pw", "tok");
  EXPECT_EQ(std::get<MqttSettings>(mqtt).password, "pw");
  TransportSettings kafka = KafkaSettings{};
  ApplyTransportSecrets(kafka, "pw", std::nullopt);
  EXPECT_EQ(std::get<KafkaSettings>(kafka).sasl.password, "pw");
  TransportSettings grpc = GrpcSettings{};
  ApplyTransportSecrets(grpc, "pw", "");
  EXPECT_EQ(std::get<GrpcSettings>(grpc).bearer_token, "");
  ApplyTransportSecrets(grpc, std::nullopt, "tok");
  EXPECT_EQ(std::get<GrpcSettings>(grpc).bearer_token, "tok");
  EXPECT_EQ(&SourceIdOf(grpc), &std::get<GrpcSettings>(grpc).source_id);
}

}  // namespace
}  // namespace mmi::transport
