#include "libs/transport/kafka/internal/kafka_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace mmi::transport::internal {
namespace {

using ::testing::HasSubstr;

KafkaSettings Settings() {
  KafkaSettings s;
  s.bootstrap_servers = "127.0.0.1:9092";
  s.source_id = "mmi";
  return s;
}

std::string Get(RdKafka::Conf& conf, const std::string& key) {
  std::string value;
  EXPECT_EQ(conf.get(key, value), RdKafka::Conf::CONF_OK) << key;
  return value;
}

TEST(KafkaConfigTest, ProducerIsIdempotentWithTheDeliveryTimeout) {
  KafkaSettings s = Settings();
  s.delivery_timeout = std::chrono::milliseconds(1234);
  auto conf = MakeKafkaConf(s, KafkaClientKind::kProducer);
  ASSERT_TRUE(conf.ok()) << conf.status();
  EXPECT_EQ(Get(**conf, "enable.idempotence"), "true");
  EXPECT_EQ(Get(**conf, "message.timeout.ms"), "1234");
  EXPECT_EQ(Get(**conf, "client.id"), "mmi-pub");
}

TEST(KafkaConfigTest, ConsumerStoresOffsetsOnlyWhenAskedAndDefaultsGroupToSourceId) {
  auto conf = MakeKafkaConf(Settings(), KafkaClientKind::kConsumer);
  ASSERT_TRUE(conf.ok()) << conf.status();
  EXPECT_EQ(Get(**conf, "group.id"), "mmi");
  EXPECT_EQ(Get(**conf, "enable.auto.offset.store"), "false");
  // librdkafka reports its canonical alias of "earliest".
  EXPECT_THAT(Get(**conf, "auto.offset.reset"), ::testing::AnyOf("earliest", "smallest"));
  // A topic created after the consumer started is picked up within seconds.
  EXPECT_EQ(Get(**conf, "topic.metadata.refresh.interval.ms"), "10000");
}

TEST(KafkaConfigTest, PassesTlsAndSaslThrough) {
  KafkaSettings s = Settings();
  s.tls = {true, "/tls/ca.crt", "/tls/client.crt", "/tls/client.key"};
  s.sasl = {"SCRAM-SHA-512", "user", "pass"};
  auto conf = MakeKafkaConf(s, KafkaClientKind::kConsumer);
  ASSERT_TRUE(conf.ok()) << conf.status();
  EXPECT_EQ(Get(**conf, "security.protocol"), "sasl_ssl");
  EXPECT_EQ(Get(**conf, "ssl.ca.location"), "/tls/ca.crt");
  EXPECT_EQ(Get(**conf, "sasl.mechanisms"), "SCRAM-SHA-512");
}

TEST(KafkaConfigTest, AdvancedConfigOverridesOursAndBadKeysNameTheField) {
  KafkaSettings s = Settings();
  s.advanced_config["linger.ms"] = "50";
  auto conf = MakeKafkaConf(s, KafkaClientKind::kProducer);
  ASSERT_TRUE(conf.ok()) << conf.status();
  EXPECT_EQ(Get(**conf, "linger.ms"), "50");
  s.advanced_config["no.such.property"] = "1";
  auto bad = MakeKafkaConf(s, KafkaClientKind::kProducer);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()),
              HasSubstr("transport.kafka.advancedConfig.no.such.property"));
}

TEST(KafkaStatusTest, MapsLibrdkafkaErrorsToRetryableOrNot) {
  EXPECT_TRUE(KafkaStatus(RdKafka::ERR_NO_ERROR, "x").ok());
  EXPECT_EQ(KafkaStatus(RdKafka::ERR__QUEUE_FULL, "x").code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(KafkaStatus(RdKafka::ERR__MSG_TIMED_OUT, "x").code(),
            absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(KafkaStatus(RdKafka::ERR_MSG_SIZE_TOO_LARGE, "x").code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(KafkaStatus(RdKafka::ERR__PURGE_QUEUE, "x").code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(KafkaStatus(RdKafka::ERR__TRANSPORT, "x").code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace mmi::transport::internal
