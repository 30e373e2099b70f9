// Smoke test: a real single-node KRaft Kafka broker started by tests/peers/bin/start-kafka
// accepts an idempotent produce and hands the record, headers included, to a consumer group.
#include <gtest/gtest.h>
#include <librdkafka/rdkafkacpp.h>

#include <chrono>
#include <memory>

#include "tests/support/peer.h"

namespace mmi {
namespace {

std::unique_ptr<RdKafka::Conf> MakeConf(const std::map<std::string, std::string>& kv) {
  std::unique_ptr<RdKafka::Conf> conf(RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
  std::string err;
  for (const auto& [k, v] : kv) {
    EXPECT_EQ(conf->set(k, v, err), RdKafka::Conf::CONF_OK) << k << ": " << err;
  }
  return conf;
}

TEST(KafkaPeerTest, ProducesAndConsumesWithHeaders) {
  MMI_START_PEER(kafka, "kafka");
  const std::string bootstrap = kafka->Get("KAFKA_BOOTSTRAP");
  const std::string topic = "mmi-smoke";
  std::string err;

  auto pconf = MakeConf({{"bootstrap.servers", bootstrap}, {"enable.idempotence", "true"}});
  std::unique_ptr<RdKafka::Producer> producer(RdKafka::Producer::create(pconf.get(), err));
  ASSERT_NE(producer, nullptr) << err;
  RdKafka::Headers* headers = RdKafka::Headers::create();
  headers->add("ce_specversion", "1.0");
  headers->add("ce_clustername", "cluster1");
  const std::string key = "cluster1";
  const std::string value = R"({"hello":"kafka"})";
  const auto rc = producer->produce(topic, RdKafka::Topic::PARTITION_UA,
                                    RdKafka::Producer::RK_MSG_COPY, const_cast<char*>(value.data()),
                                    value.size(), key.data(), key.size(), 0, headers, nullptr);
  ASSERT_EQ(rc, RdKafka::ERR_NO_ERROR) << RdKafka::err2str(rc);
  ASSERT_EQ(producer->flush(30'000), RdKafka::ERR_NO_ERROR);

  auto cconf = MakeConf({{"bootstrap.servers", bootstrap},
                         {"group.id", "mmi-smoke-group"},
                         {"auto.offset.reset", "earliest"}});
  std::unique_ptr<RdKafka::KafkaConsumer> consumer(
      RdKafka::KafkaConsumer::create(cconf.get(), err));
  ASSERT_NE(consumer, nullptr) << err;
  ASSERT_EQ(consumer->subscribe({topic}), RdKafka::ERR_NO_ERROR);

  std::unique_ptr<RdKafka::Message> got;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    got.reset(consumer->consume(500));
    if (got && got->err() == RdKafka::ERR_NO_ERROR) {
      break;
    }
    got.reset();
  }
  ASSERT_NE(got, nullptr) << "no record consumed within 60s";
  EXPECT_EQ(std::string(static_cast<const char*>(got->payload()), got->len()), value);
  ASSERT_NE(got->key(), nullptr);
  EXPECT_EQ(*got->key(), key);
  ASSERT_NE(got->headers(), nullptr);
  const auto cluster = got->headers()->get_last("ce_clustername");
  EXPECT_EQ(std::string(static_cast<const char*>(cluster.value()), cluster.value_size()),
            "cluster1");
  consumer->close();
}

}  // namespace
}  // namespace mmi
