#include "services/status-sink/settings.h"

#include <gtest/gtest.h>

#include <map>

#include "libs/service/testing/fake_env.h"

namespace mmi::status_sink {
namespace {

using service::testing::FakeEnv;

TEST(SettingsTest, ReadsTheYamlFileOverTheDefaults) {
  auto s = ParseSettingsYaml(R"(
logLevel: debug
kube: {kubeconfig: /tmp/kc, qps: 50}
store: {dsn: "postgresql://x/y", poolSize: 2}
leaderElection: {namespace: mmi, leaseDuration: 20s}
transport:
  type: mqtt
  mqtt: {brokerHost: "broker:1883", sourceId: mmi-dispatcher}
status: {maxInFlight: 8, volatileInterval: 10m, ignoreResourceHealthMessages: true,
         maxManifestPayloads: 64, maxManifestStatuses: 500}
shutdownTimeout: 5s
)");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->log_level, "debug");
  EXPECT_EQ(s->kube.qps, 50);
  EXPECT_EQ(s->store.pool_size, 2);
  EXPECT_EQ(s->leader.lease_duration, std::chrono::seconds(20));
  EXPECT_EQ(s->sink.max_in_flight, 8U);
  EXPECT_EQ(s->sink.coalescer.volatile_interval, std::chrono::minutes(10));
  EXPECT_TRUE(s->sink.coalescer.ignore_resource_health_messages);
  EXPECT_EQ(s->sink.max_manifest_payloads, 64U);
  EXPECT_EQ(s->sink.max_manifest_statuses, 500U);
  EXPECT_EQ(s->shutdown_timeout, std::chrono::seconds(5));
  ASSERT_TRUE(std::holds_alternative<transport::MqttSettings>(s->transport));
  EXPECT_EQ(std::get<transport::MqttSettings>(s->transport).broker_host, "broker:1883");
  ASSERT_TRUE(FinalizeSettings(*s).ok());
  EXPECT_EQ(s->sink.source_id, "mmi-dispatcher");
  EXPECT_FALSE(s->leader.identity.empty());
}

TEST(SettingsTest, ReportsEveryBadFieldByItsPath) {
  auto s = ParseSettingsYaml("status: {maxInFlight: many, volatileInterval: soon}\n");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("status.maxInFlight"), std::string::npos);
  EXPECT_NE(s.status().message().find("status.volatileInterval"), std::string::npos);
  StatusSinkSettings defaults;
  const absl::Status finalized = FinalizeSettings(defaults);
  EXPECT_NE(finalized.message().find("store.dsn"), std::string::npos);
  EXPECT_NE(finalized.message().find("transport.mqtt.brokerHost"), std::string::npos);
}

TEST(SettingsTest, RejectsUnknownKeysByTheirFullPath) {
  auto s = ParseSettingsYaml(R"(
status: {maxInFligth: 8}
transport: {type: kafka, kafka: {bootstrapServer: "k:9092", sasl: {user: u}}}
leaderElection: {leaseDuration: 20s, lease: x}
)");
  ASSERT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string msg(s.status().message());
  EXPECT_NE(msg.find("status.maxInFligth: unknown key"), std::string::npos) << msg;
  EXPECT_NE(msg.find("transport.kafka.sasl.user: unknown key"), std::string::npos) << msg;
  EXPECT_NE(msg.find("leaderElection.lease: unknown key"), std::string::npos) << msg;
  EXPECT_EQ(StatusSinkSettings{}.kube.request_timeout, std::chrono::seconds(30));
  EXPECT_EQ(StatusSinkSettings{}.leader.lease_name, "mmi-status-sink");
}

TEST(SettingsTest, ProgressingBeforeHealthyIsAModeRollingSyncByDefault) {
  EXPECT_EQ(ParseSettingsYaml("{}")->sink.progressing_before_healthy,
            ProgressingMode::kRollingSync);
  EXPECT_EQ(ParseSettingsYaml("status: {progressingBeforeHealthy: Always}\n")
                ->sink.progressing_before_healthy,
            ProgressingMode::kAlways);
  // The boolean of earlier releases still reads: true = Always, false = Never.
  EXPECT_EQ(ParseSettingsYaml("status: {progressingBeforeHealthy: false}\n")
                ->sink.progressing_before_healthy,
            ProgressingMode::kNever);
  auto bad = ParseSettingsYaml("status: {progressingBeforeHealthy: sometimes}\n");
  ASSERT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("status.progressingBeforeHealthy"), std::string::npos);
}

TEST(SettingsTest, MaxManifestPayloadsIs1024ByDefaultAndAtLeastOne) {
  EXPECT_EQ(ParseSettingsYaml("{}")->sink.max_manifest_payloads, 1024U);
  EXPECT_EQ(ParseSettingsYaml("{}")->sink.max_manifest_statuses, 100000U);
  auto zero = ParseSettingsYaml(R"(
transport:
  type: mqtt
  mqtt: {brokerHost: "broker:1883", sourceId: mmi-dispatcher}
status: {maxManifestPayloads: 0}
)");
  ASSERT_TRUE(zero.ok()) << zero.status();
  const absl::Status invalid = FinalizeSettings(*zero);
  ASSERT_EQ(invalid.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(invalid.message().find("status.maxManifestPayloads: must be at least 1"),
            std::string::npos)
      << invalid;
  auto negative = ParseSettingsYaml("status: {maxManifestPayloads: -1}\n");
  ASSERT_EQ(negative.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(negative.status().message().find("status.maxManifestPayloads"), std::string::npos)
      << negative.status();
}

TEST(SettingsTest, EnvironmentAndFlagsOverrideTheFile) {
  const char* argv[] = {"status-sink", "--kubeconfig", "/flag/kc", "--leader-elect", "false"};
  auto s = LoadSettings(5, argv,
                        FakeEnv({{"MMI_STORE_DSN", "postgresql://env/db"},
                                 {"POD_NAMESPACE", "mmi"},
                                 {"KUBECONFIG", "/env/kc"}}));
  // The default transport has no broker: validation names it, nothing else.
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message().find("store.dsn"), std::string::npos);
  EXPECT_EQ(s.status().message().find("kube.kubeconfig"), std::string::npos);
  EXPECT_NE(s.status().message().find("transport.mqtt"), std::string::npos);
}

}  // namespace
}  // namespace mmi::status_sink
