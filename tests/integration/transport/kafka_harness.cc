// The contract suite for the Kafka transport against a real single-node Kafka (KRaft) started by
// tests/peers/bin/start-kafka, shared by the tests of this binary (each test has its own topics
// and consumer group). The agent side is raw librdkafka: a producer of binary-mode records on
// the agent topic (null key, as Go agents send, §5.1) and a consumer of the source topic.
#include <gtest/gtest.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafkacpp.h>

#include <atomic>
#include <memory>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "libs/cloudevents/kafka_codec.h"
#include "tests/integration/transport/contract_harness.h"
#include "tests/support/peer.h"

namespace mmi::transport::contract {
namespace {

constexpr std::size_t kLimit = 256 * 1024;

// Started by the first test that needs it, stopped after the last test of the binary.
class SharedKafka : public ::testing::Environment {
 public:
  static mmi::testing::PeerProcess* Get(absl::Status* error) {
    absl::MutexLock lock(&mu_);
    if (peer_ == nullptr && start_error_.ok()) {
      auto started = mmi::testing::PeerProcess::Start("kafka");
      if (started.ok()) {
        peer_ = std::move(*started).release();
      } else {
        start_error_ = started.status();
      }
    }
    *error = start_error_;
    return peer_;
  }
  void TearDown() override {
    absl::MutexLock lock(&mu_);
    delete peer_;
    peer_ = nullptr;
  }

 private:
  static absl::Mutex mu_;
  static mmi::testing::PeerProcess* peer_ ABSL_GUARDED_BY(mu_);
  static absl::Status start_error_ ABSL_GUARDED_BY(mu_);
};
absl::Mutex SharedKafka::mu_;
mmi::testing::PeerProcess* SharedKafka::peer_ = nullptr;
absl::Status SharedKafka::start_error_;
[[maybe_unused]] ::testing::Environment* const kSharedKafkaEnv =
    ::testing::AddGlobalTestEnvironment(new SharedKafka);

std::unique_ptr<RdKafka::Conf> Conf(const std::map<std::string, std::string>& properties) {
  std::unique_ptr<RdKafka::Conf> conf(RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
  std::string error;
  for (const auto& [key, value] : properties) {
    EXPECT_EQ(conf->set(key, value, error), RdKafka::Conf::CONF_OK) << key << ": " << error;
  }
  return conf;
}

class KafkaHarness final : public Harness {
 public:
  ~KafkaHarness() override {
    running_ = false;
    if (consumer_thread_.joinable()) {
      consumer_thread_.join();
    }
    if (consumer_ != nullptr) {
      consumer_->close();
    }
  }

  std::string name() const override { return "kafka"; }

  void SetUp(const std::string& source_id) override {
    absl::Status error;
    kafka_ = SharedKafka::Get(&error);
    ASSERT_NE(kafka_, nullptr) << "Kafka could not start: " << error;
    bootstrap_ = kafka_->Get("KAFKA_BOOTSTRAP");
    settings_.bootstrap_servers = bootstrap_;
    settings_.source_id = source_id;
    settings_.group_id = source_id + "-status";
    settings_.source_events_topic = source_id + ".sourceevents";
    settings_.agent_events_topic = source_id + ".agentevents";
    settings_.delivery_timeout = std::chrono::milliseconds(60'000);
    settings_.limits.max_event_bytes = kLimit;
    settings_.advanced_config = {{"topic.metadata.refresh.interval.ms", "1000"}};

    std::string err;
    producer_.reset(RdKafka::Producer::create(
        Conf({{"bootstrap.servers", bootstrap_}, {"message.timeout.ms", "60000"}}).get(), err));
    ASSERT_NE(producer_, nullptr) << err;
    // Three partitions for what the source produces (keyed by cluster), one for the agents'
    // keyless records so that their order is the topic's order.
    CreateTopic(settings_.source_events_topic, 3);
    CreateTopic(settings_.agent_events_topic, 1);
    if (::testing::Test::HasFatalFailure()) {
      return;
    }

    consumer_.reset(
        RdKafka::KafkaConsumer::create(Conf({{"bootstrap.servers", bootstrap_},
                                             {"group.id", source_id + "-agent"},
                                             {"auto.offset.reset", "earliest"},
                                             {"topic.metadata.refresh.interval.ms", "1000"}})
                                           .get(),
                                       err));
    ASSERT_NE(consumer_, nullptr) << err;
    ASSERT_EQ(consumer_->subscribe({settings_.source_events_topic}), RdKafka::ERR_NO_ERROR);
    running_ = true;
    consumer_thread_ = std::thread([this] { ConsumeLoop(); });
  }

  TransportClients MakeClients(Clock& clock, prometheus::Registry& registry) override {
    auto clients =
        transport::MakeClients(TransportSettings(settings_), TransportDeps{clock, registry});
    EXPECT_TRUE(clients.ok()) << clients.status();
    return clients.ok() ? *std::move(clients) : TransportClients{};
  }

  void AgentSend(const cloudevents::Event& event) override {
    auto record = cloudevents::EncodeKafka(event);
    ASSERT_TRUE(record.ok()) << record.status();
    Produce(*record);
  }
  void AgentSendMalformed() override {
    cloudevents::KafkaRecord record;
    record.value = R"({"hello":"kafka"})";  // no ce-specversion header: not a CloudEvent
    Produce(record);
  }
  void AgentSendOversize() override {
    cloudevents::KafkaRecord record;
    record.value = std::string(kLimit + 1, 'x');
    record.headers = {{"ce-specversion", "1.0"}};
    Produce(record);
  }
  std::vector<cloudevents::Event> AgentReceived() override {
    absl::MutexLock lock(&mu_);
    EXPECT_EQ(decode_errors_, 0) << "the agent could not decode what the source sent";
    return received_;
  }
  void RestartBroker() override {
    const auto result = mmi::testing::RunCommand(mmi::testing::PeersBinDir() + "/restart-kafka '" +
                                                 kafka_->data_dir() + "'");
    ASSERT_EQ(result.exit_code, 0) << result.output;
  }
  bool RedeliversUnacked() const override { return true; }
  bool UsePersistentSession() override { return true; }  // the group's committed offsets

 private:
  void CreateTopic(const std::string& topic, int partitions) {
    char error[512];
    rd_kafka_t* rk = producer_->c_ptr();
    rd_kafka_NewTopic_t* new_topic =
        rd_kafka_NewTopic_new(topic.c_str(), partitions, 1, error, sizeof(error));
    ASSERT_NE(new_topic, nullptr) << error;
    rd_kafka_queue_t* queue = rd_kafka_queue_new(rk);
    rd_kafka_CreateTopics(rk, &new_topic, 1, nullptr, queue);
    rd_kafka_event_t* event = rd_kafka_queue_poll(queue, 60'000);
    ASSERT_NE(event, nullptr) << "CreateTopics timed out for " << topic;
    EXPECT_EQ(rd_kafka_event_error(event), RD_KAFKA_RESP_ERR_NO_ERROR)
        << rd_kafka_event_error_string(event);
    const rd_kafka_CreateTopics_result_t* result = rd_kafka_event_CreateTopics_result(event);
    size_t count = 0;
    const rd_kafka_topic_result_t** topics = rd_kafka_CreateTopics_result_topics(result, &count);
    for (size_t i = 0; i < count; ++i) {
      EXPECT_EQ(rd_kafka_topic_result_error(topics[i]), RD_KAFKA_RESP_ERR_NO_ERROR)
          << rd_kafka_topic_result_error_string(topics[i]);
    }
    rd_kafka_event_destroy(event);
    rd_kafka_queue_destroy(queue);
    rd_kafka_NewTopic_destroy(new_topic);
  }

  void Produce(const cloudevents::KafkaRecord& record) {
    RdKafka::Headers* headers = RdKafka::Headers::create();
    for (const auto& [name, value] : record.headers) {
      headers->add(name, value);
    }
    const RdKafka::ErrorCode code =
        producer_->produce(settings_.agent_events_topic, RdKafka::Topic::PARTITION_UA,
                           RdKafka::Producer::RK_MSG_COPY, const_cast<char*>(record.value.data()),
                           record.value.size(), nullptr, 0, 0, headers, nullptr);
    if (code != RdKafka::ERR_NO_ERROR) {
      delete headers;
    }
    ASSERT_EQ(code, RdKafka::ERR_NO_ERROR) << RdKafka::err2str(code);
    ASSERT_EQ(producer_->flush(60'000), RdKafka::ERR_NO_ERROR);
  }

  void ConsumeLoop() {
    while (running_) {
      std::unique_ptr<RdKafka::Message> message(consumer_->consume(100));
      if (message->err() != RdKafka::ERR_NO_ERROR) {
        continue;
      }
      cloudevents::KafkaRecord record;
      record.topic = message->topic_name();
      if (message->key() != nullptr) {
        record.key = *message->key();
      }
      record.value.assign(static_cast<const char*>(message->payload()), message->len());
      if (message->headers() != nullptr) {
        for (const auto& h : message->headers()->get_all()) {
          record.headers.emplace_back(
              h.key(), std::string(static_cast<const char*>(h.value()), h.value_size()));
        }
      }
      auto event = cloudevents::DecodeKafka(record);
      absl::MutexLock lock(&mu_);
      if (event.ok() && record.key.has_value() && *event->ClusterName() == *record.key) {
        received_.push_back(*std::move(event));
      } else {
        ++decode_errors_;  // undecodable, or not keyed by its cluster
      }
    }
  }

  mmi::testing::PeerProcess* kafka_ = nullptr;
  std::string bootstrap_;
  KafkaSettings settings_;
  std::unique_ptr<RdKafka::Producer> producer_;
  std::unique_ptr<RdKafka::KafkaConsumer> consumer_;
  std::thread consumer_thread_;
  std::atomic<bool> running_{false};
  absl::Mutex mu_;
  std::vector<cloudevents::Event> received_ ABSL_GUARDED_BY(mu_);
  int decode_errors_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace

std::unique_ptr<Harness> MakeKafkaHarness() { return std::make_unique<KafkaHarness>(); }

}  // namespace mmi::transport::contract
