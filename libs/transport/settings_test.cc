#include "libs/transport/settings.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace mmi::transport {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

MqttSettings ValidMqtt() {
  MqttSettings s;
  s.broker_host = "mosquitto.mqtt:1883";
  s.source_id = "mmi-dispatcher";
  return s;
}

GrpcSettings ValidGrpc() {
  GrpcSettings s;
  s.url = "maestro-grpc.maestro:8090";
  s.source_id = "app-work-client";
  return s;
}

KafkaSettings ValidKafka() {
  KafkaSettings s;
  s.bootstrap_servers = "kafka-0:9092,kafka-1:9092";
  s.source_id = "mmi-dispatcher";
  return s;
}

std::string Message(const absl::Status& status) { return std::string(status.message()); }

TEST(MqttSettingsTest, DefaultsAreValidOnceBrokerAndSourceAreSet) {
  EXPECT_TRUE(ValidateMqttSettings(ValidMqtt()).ok()) << ValidateMqttSettings(ValidMqtt());
}

TEST(MqttSettingsTest, DefaultTopicsFollowMaestroSchemeWithSharedSubscription) {
  const MqttTopicSettings topics = ResolvedMqttTopics(ValidMqtt());
  EXPECT_EQ(topics.source_events, "sources/mmi-dispatcher/consumers/+/sourceevents");
  EXPECT_EQ(topics.agent_events,
            "$share/statussubscribers/sources/mmi-dispatcher/consumers/+/agentevents");
  EXPECT_EQ(topics.source_broadcast, "");
}

TEST(MqttSettingsTest, EmptySharedGroupSubscribesWithoutSharePrefix) {
  MqttSettings s = ValidMqtt();
  s.shared_group = "";
  EXPECT_EQ(ResolvedMqttTopics(s).agent_events, "sources/mmi-dispatcher/consumers/+/agentevents");
}

TEST(MqttSettingsTest, ReportsBrokerHostByFullFieldPath) {
  MqttSettings s = ValidMqtt();
  s.broker_host = "broker";
  const absl::Status status = ValidateMqttSettings(s);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(status), HasSubstr("transport.mqtt.brokerHost: must be host:port"));
}

TEST(MqttSettingsTest, RejectsSourceIdsThatCannotBeTopicSegments) {
  for (const char* bad : {"", "App", "app.work", "app_work", "a/b"}) {
    MqttSettings s = ValidMqtt();
    s.source_id = bad;
    EXPECT_THAT(Message(ValidateMqttSettings(s)), HasSubstr("transport.mqtt.sourceId"))
        << "source id " << bad;
  }
}

TEST(MqttSettingsTest, RejectsTopicsThatDoNotMatchTheSpecRegex) {
  MqttSettings s = ValidMqtt();
  s.topics.source_events = "sources/mmi-dispatcher/consumers/+/specs";
  EXPECT_THAT(Message(ValidateMqttSettings(s)), HasSubstr("transport.mqtt.topics.sourceEvents"));
}

TEST(MqttSettingsTest, RejectsSharePrefixOnThePublishTopic) {
  MqttSettings s = ValidMqtt();
  s.topics.source_events = "$share/g/sources/mmi-dispatcher/consumers/+/sourceevents";
  EXPECT_THAT(Message(ValidateMqttSettings(s)), HasSubstr("cannot have a $share/ prefix"));
}

TEST(MqttSettingsTest, RequiresOwnSourceIdInTheTopics) {
  MqttSettings s = ValidMqtt();
  s.topics.agent_events = "sources/maestro/consumers/+/agentevents";
  EXPECT_THAT(Message(ValidateMqttSettings(s)),
              AllOf(HasSubstr("transport.mqtt.topics.agentEvents"),
                    HasSubstr("source segment must be the source id")));
}

TEST(MqttSettingsTest, AcceptsSpecExamplesOfBroadcastTopics) {
  MqttSettings s = ValidMqtt();
  s.topics.source_broadcast = "sources/+/sourcebroadcast";
  s.topics.agent_broadcast = "$share/g/clusters/+/agentbroadcast";
  EXPECT_TRUE(ValidateMqttSettings(s).ok()) << ValidateMqttSettings(s);
}

TEST(MqttSettingsTest, ListsEveryProblemAtOnce) {
  MqttSettings s = ValidMqtt();
  s.broker_host = "";
  s.pub_qos = 2;
  s.tls.client_cert_file = "/tls/client.crt";
  const std::string message = Message(ValidateMqttSettings(s));
  EXPECT_THAT(message, HasSubstr("transport.mqtt.brokerHost"));
  EXPECT_THAT(message, HasSubstr("transport.mqtt.pubQoS: must be 0 or 1"));
  EXPECT_THAT(message, HasSubstr("transport.mqtt.tls.enabled"));
  EXPECT_THAT(message, HasSubstr("transport.mqtt.tls.clientKeyFile"));
}

TEST(MqttSettingsTest, RejectsAPasswordWithoutUsername) {
  MqttSettings s = ValidMqtt();
  s.password = "secret";
  EXPECT_THAT(Message(ValidateMqttSettings(s)), HasSubstr("transport.mqtt.username"));
}

TEST(MqttSettingsTest, RejectsCredentialsLongerThanAnMqttString) {
  MqttSettings s = ValidMqtt();
  s.username = std::string(65'536, 'u');
  s.password = std::string(65'536, 'p');
  EXPECT_THAT(Message(ValidateMqttSettings(s)),
              HasSubstr("transport.mqtt.username: must be at most"));
  EXPECT_THAT(Message(ValidateMqttSettings(s)),
              HasSubstr("transport.mqtt.password: must be at most"));
}

TEST(GrpcSettingsTest, DefaultsAreValidOnceUrlAndSourceAreSet) {
  EXPECT_TRUE(ValidateGrpcSettings(ValidGrpc()).ok()) << ValidateGrpcSettings(ValidGrpc());
}

TEST(GrpcSettingsTest, AcceptsDnsSchemeTargets) {
  GrpcSettings s = ValidGrpc();
  s.url = "dns:///maestro-grpc.maestro:8090";
  EXPECT_TRUE(ValidateGrpcSettings(s).ok()) << ValidateGrpcSettings(s);
}

TEST(GrpcSettingsTest, RefusesPingsMoreOftenThanMaestroAllows) {
  GrpcSettings s = ValidGrpc();
  s.keep_alive_time = std::chrono::milliseconds(1'000);
  EXPECT_THAT(Message(ValidateGrpcSettings(s)), HasSubstr("transport.grpc.keepAliveTime"));
  s.keep_alive_time = std::chrono::milliseconds(0);
  EXPECT_TRUE(ValidateGrpcSettings(s).ok());
}

TEST(GrpcSettingsTest, RefusesABearerTokenWithoutTls) {
  GrpcSettings s = ValidGrpc();
  s.bearer_token = "t0ken";
  EXPECT_THAT(Message(ValidateGrpcSettings(s)), HasSubstr("transport.grpc.token"));
  s.tls.enabled = true;
  EXPECT_TRUE(ValidateGrpcSettings(s).ok());
}

TEST(GrpcSettingsTest, RefusesATokenFileWithoutTlsOrNextToAToken) {
  GrpcSettings s = ValidGrpc();
  s.token_file = "/var/run/secrets/kubernetes.io/serviceaccount/token";
  EXPECT_THAT(Message(ValidateGrpcSettings(s)), HasSubstr("transport.grpc.tokenFile"));
  s.tls.enabled = true;
  EXPECT_TRUE(ValidateGrpcSettings(s).ok());
  s.bearer_token = "t0ken";
  EXPECT_THAT(Message(ValidateGrpcSettings(s)), HasSubstr("either token or tokenFile"));
}

TEST(GrpcSettingsTest, RefusesAReceiveLimitBelowFourMebibytes) {
  GrpcSettings s = ValidGrpc();
  s.max_receive_bytes = 1024;
  EXPECT_THAT(Message(ValidateGrpcSettings(s)), HasSubstr("transport.grpc.maxReceiveBytes"));
}

// Maestro starves its own database pool with as many updates in flight as it has connections
// (GrpcSettings::max_in_flight): the default stays well below its default pool of 50.
TEST(GrpcSettingsTest, BoundsPublishCallsInFlightWellBelowMaestrosDatabasePool) {
  GrpcSettings s = ValidGrpc();
  EXPECT_EQ(s.max_in_flight, 16u);
  s.max_in_flight = 0;
  EXPECT_THAT(Message(ValidateGrpcSettings(s)), HasSubstr("transport.grpc.maxInFlight"));
}

TEST(GrpcSettingsTest, RefusesAMalformedDataType) {
  GrpcSettings s = ValidGrpc();
  s.data_type = "manifestbundles";
  EXPECT_THAT(Message(ValidateGrpcSettings(s)), HasSubstr("transport.grpc.dataType"));
}

TEST(KafkaSettingsTest, DefaultsAreValidOnceBootstrapAndSourceAreSet) {
  EXPECT_TRUE(ValidateKafkaSettings(ValidKafka()).ok()) << ValidateKafkaSettings(ValidKafka());
}

TEST(KafkaSettingsTest, ChecksEveryBootstrapServer) {
  KafkaSettings s = ValidKafka();
  s.bootstrap_servers = "kafka-0:9092,kafka-1";
  EXPECT_THAT(Message(ValidateKafkaSettings(s)), HasSubstr("transport.kafka.bootstrapServer"));
}

TEST(KafkaSettingsTest, RequiresCredentialsWithASaslMechanism) {
  KafkaSettings s = ValidKafka();
  s.sasl.mechanism = "SCRAM-SHA-512";
  EXPECT_THAT(Message(ValidateKafkaSettings(s)), HasSubstr("transport.kafka.sasl.username"));
  s.sasl.mechanism = "GSSAPI";
  s.sasl.username = "u";
  s.sasl.password = "p";
  EXPECT_THAT(Message(ValidateKafkaSettings(s)), HasSubstr("transport.kafka.sasl.mechanism"));
}

TEST(KafkaSettingsTest, RejectsInvalidTopicNames) {
  KafkaSettings s = ValidKafka();
  s.agent_events_topic = "agent events";
  EXPECT_THAT(Message(ValidateKafkaSettings(s)), HasSubstr("transport.kafka.agentEventsTopic"));
}

TEST(TransportSettingsTest, ValidatesTheSelectedAlternativeUnderItsPath) {
  TransportSettings settings = ValidKafka();
  std::get<KafkaSettings>(settings).source_id = "";
  EXPECT_THAT(Message(ValidateTransportSettings(settings)),
              HasSubstr("transport.kafka.sourceId: must be set"));
  EXPECT_EQ(TransportName(settings), "kafka");
  EXPECT_EQ(TransportName(TransportSettings(ValidMqtt())), "mqtt");
  EXPECT_EQ(TransportName(TransportSettings(ValidGrpc())), "grpc");
}

TEST(TransportSettingsTest, RedactedSummaryNeverContainsSecrets) {
  MqttSettings mqtt = ValidMqtt();
  mqtt.username = "user";
  mqtt.password = "mqtt-secret";
  GrpcSettings grpc = ValidGrpc();
  grpc.tls.enabled = true;
  grpc.bearer_token = "grpc-secret";
  KafkaSettings kafka = ValidKafka();
  kafka.sasl = {"PLAIN", "user", "kafka-secret"};
  kafka.advanced_config["ssl.key.password"] = "key-secret";
  for (const TransportSettings& settings :
       {TransportSettings(mqtt), TransportSettings(grpc), TransportSettings(kafka)}) {
    const std::string summary = RedactedSummary(settings);
    EXPECT_THAT(summary, Not(HasSubstr("secret"))) << summary;
    EXPECT_THAT(summary, HasSubstr("<redacted>")) << summary;
  }
}

}  // namespace
}  // namespace mmi::transport
