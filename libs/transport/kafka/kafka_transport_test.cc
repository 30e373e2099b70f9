// KafkaPublisher / KafkaSubscriber against librdkafka's in-process mock cluster (no real broker;
// the real-broker behaviour is covered by tests/integration/transport).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <librdkafka/rdkafkacpp.h>

#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "libs/cloudevents/kafka_codec.h"
#include "libs/common/testing/fake_clock.h"
#include "libs/transport/kafka/kafka_publisher.h"
#include "libs/transport/kafka/kafka_subscriber.h"
#include "libs/transport/testing/metric_value.h"
#include "libs/transport/testing/test_events.h"

namespace mmi::transport {
namespace {

using testing::MakeSpecEvent;
using testing::MakeStatusEvent;
using testing::MetricValue;
using testing::SeqOf;

constexpr auto kWait = std::chrono::seconds(20);

// A one-broker mock cluster owned by a throw-away handle.
class MockCluster {
 public:
  MockCluster() {
    char error[512];
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "log_level", "0", error, sizeof(error));
    handle_ = rd_kafka_new(RD_KAFKA_PRODUCER, conf, error, sizeof(error));
    cluster_ = rd_kafka_mock_cluster_new(handle_, 1);
    bootstraps_ = rd_kafka_mock_cluster_bootstraps(cluster_);
  }
  ~MockCluster() {
    rd_kafka_mock_cluster_destroy(cluster_);
    rd_kafka_destroy(handle_);
  }
  void CreateTopic(const std::string& topic, int partitions) {
    ASSERT_EQ(rd_kafka_mock_topic_create(cluster_, topic.c_str(), partitions, 1),
              RD_KAFKA_RESP_ERR_NO_ERROR);
  }
  void SetBrokerDown() { rd_kafka_mock_broker_set_down(cluster_, 1); }
  const std::string& bootstraps() const { return bootstraps_; }

 private:
  rd_kafka_t* handle_ = nullptr;
  rd_kafka_mock_cluster_t* cluster_ = nullptr;
  std::string bootstraps_;
};

class KafkaTransportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cluster_.CreateTopic("sourceevents", 3);
    cluster_.CreateTopic("agentevents", 1);
    settings_.bootstrap_servers = cluster_.bootstraps();
    settings_.source_id = "mmi";
    settings_.group_id = "mmi-status";
    settings_.delivery_timeout = std::chrono::milliseconds(5'000);
    // The mock coordinator lets a new member join only after departed members' sessions
    // expire, so keep sessions short.
    settings_.advanced_config = {
        {"log_level", "0"}, {"session.timeout.ms", "6000"}, {"heartbeat.interval.ms", "100"}};
  }

  // Produces raw records as an agent would (binary mode, codec-encoded).
  void ProduceRaw(const std::vector<cloudevents::KafkaRecord>& records) {
    std::string error;
    std::unique_ptr<RdKafka::Conf> conf(RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
    conf->set("bootstrap.servers", cluster_.bootstraps(), error);
    conf->set("log_level", "0", error);
    std::unique_ptr<RdKafka::Producer> producer(RdKafka::Producer::create(conf.get(), error));
    ASSERT_NE(producer, nullptr) << error;
    for (const cloudevents::KafkaRecord& record : records) {
      RdKafka::Headers* headers = RdKafka::Headers::create();
      for (const auto& [name, value] : record.headers) {
        headers->add(name, value);
      }
      ASSERT_EQ(
          producer->produce(record.topic, RdKafka::Topic::PARTITION_UA,
                            RdKafka::Producer::RK_MSG_COPY, const_cast<char*>(record.value.data()),
                            record.value.size(), nullptr, 0, 0, headers, nullptr),
          RdKafka::ERR_NO_ERROR);
    }
    ASSERT_EQ(producer->flush(10'000), RdKafka::ERR_NO_ERROR);
  }

  cloudevents::KafkaRecord AgentRecord(int seq) {
    auto record = cloudevents::EncodeKafka(MakeStatusEvent("mmi", "cluster1", seq));
    EXPECT_TRUE(record.ok()) << record.status();
    return *record;
  }

  MockCluster cluster_;
  KafkaSettings settings_;
  mmi::testing::FakeClock clock_;
  prometheus::Registry registry_;
};

// Collects handler calls; acks only the sequence numbers it is told to.
class Recorder {
 public:
  explicit Recorder(std::set<int> withhold = {}) : withhold_(std::move(withhold)) {}
  EventHandler Handler() {
    return [this](cloudevents::Event event, AckFn ack) {
      const int seq = SeqOf(event);
      if (withhold_.count(seq) == 0) {
        std::move(ack)();
      }
      absl::MutexLock lock(&mu_);
      seqs_.push_back(seq);
    };
  }
  bool WaitForCount(size_t n) {
    absl::MutexLock lock(&mu_);
    auto enough = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return seqs_.size() >= n; };
    return mu_.AwaitWithTimeout(absl::Condition(&enough), absl::FromChrono(kWait));
  }
  std::vector<int> seqs() {
    absl::MutexLock lock(&mu_);
    return seqs_;
  }

 private:
  std::set<int> withhold_;
  absl::Mutex mu_;
  std::vector<int> seqs_ ABSL_GUARDED_BY(mu_);
};

TEST_F(KafkaTransportTest, PublisherGetsOkPerEventAndKeysRecordsByCluster) {
  KafkaPublisher publisher(settings_, clock_, registry_);
  ASSERT_TRUE(publisher.Start().ok());
  std::vector<std::future<absl::Status>> results;
  std::vector<std::promise<absl::Status>> promises(6);
  for (int i = 0; i < 6; ++i) {
    results.push_back(promises[i].get_future());
    publisher.Publish(MakeSpecEvent("mmi", i % 2 == 0 ? "cluster-a" : "cluster-b", i),
                      [&promises, i](absl::Status s) { promises[i].set_value(s); });
  }
  for (auto& result : results) {
    ASSERT_EQ(result.wait_for(kWait), std::future_status::ready);
    EXPECT_TRUE(result.get().ok());
  }
  EXPECT_TRUE(publisher.connected());
  publisher.Stop();
  EXPECT_EQ(MetricValue(registry_, "mmi_events_published_total",
                        {{"transport", "kafka"}, {"result", "ok"}}),
            6);

  // Read everything back: key = cluster, one partition per cluster, order kept, ce- headers.
  std::string error;
  std::unique_ptr<RdKafka::Conf> conf(RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
  conf->set("bootstrap.servers", cluster_.bootstraps(), error);
  conf->set("group.id", "verifier", error);
  conf->set("auto.offset.reset", "earliest", error);
  conf->set("log_level", "0", error);
  std::unique_ptr<RdKafka::KafkaConsumer> consumer(
      RdKafka::KafkaConsumer::create(conf.get(), error));
  ASSERT_NE(consumer, nullptr) << error;
  // Assign the partitions directly: no consumer-group join (the mock's takes seconds).
  std::vector<RdKafka::TopicPartition*> partitions;
  for (int p = 0; p < 3; ++p) {
    partitions.push_back(
        RdKafka::TopicPartition::create("sourceevents", p, RdKafka::Topic::OFFSET_BEGINNING));
  }
  ASSERT_EQ(consumer->assign(partitions), RdKafka::ERR_NO_ERROR);
  RdKafka::TopicPartition::destroy(partitions);
  std::map<std::string, std::vector<int>> seqs_by_key;
  std::map<std::string, std::set<int32_t>> partitions_by_key;
  int got = 0;
  const auto deadline = std::chrono::steady_clock::now() + kWait;
  while (got < 6 && std::chrono::steady_clock::now() < deadline) {
    std::unique_ptr<RdKafka::Message> m(consumer->consume(100));
    if (m->err() != RdKafka::ERR_NO_ERROR) {
      continue;
    }
    ++got;
    ASSERT_NE(m->key(), nullptr);
    cloudevents::KafkaRecord record;
    record.topic = m->topic_name();
    record.value.assign(static_cast<const char*>(m->payload()), m->len());
    for (const auto& h : m->headers()->get_all()) {
      record.headers.emplace_back(h.key(),
                                  std::string(static_cast<const char*>(h.value()), h.value_size()));
    }
    auto event = cloudevents::DecodeKafka(record);
    ASSERT_TRUE(event.ok()) << event.status();
    EXPECT_EQ(*event->ClusterName(), *m->key());
    seqs_by_key[*m->key()].push_back(SeqOf(*event));
    partitions_by_key[*m->key()].insert(m->partition());
  }
  consumer->close();
  ASSERT_EQ(got, 6);
  EXPECT_THAT(seqs_by_key["cluster-a"], ::testing::ElementsAre(0, 2, 4));
  EXPECT_THAT(seqs_by_key["cluster-b"], ::testing::ElementsAre(1, 3, 5));
  EXPECT_EQ(partitions_by_key["cluster-a"].size(), 1u);
  EXPECT_EQ(partitions_by_key["cluster-b"].size(), 1u);
}

TEST_F(KafkaTransportTest, PublisherRejectsEventsOfAnotherSourceWithoutProducing) {
  KafkaPublisher publisher(settings_, clock_, registry_);
  ASSERT_TRUE(publisher.Start().ok());
  std::promise<absl::Status> result;
  publisher.Publish(MakeSpecEvent("someone-else", "cluster-a", 1),
                    [&result](absl::Status s) { result.set_value(s); });
  EXPECT_EQ(result.get_future().get().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(KafkaTransportTest, PublishTimesOutWhenTheBrokerStaysDown) {
  cluster_.SetBrokerDown();
  settings_.delivery_timeout = std::chrono::milliseconds(300);
  KafkaPublisher publisher(settings_, clock_, registry_);
  ASSERT_TRUE(publisher.Start().ok());
  std::promise<absl::Status> result;
  publisher.Publish(MakeSpecEvent("mmi", "cluster-a", 1),
                    [&result](absl::Status s) { result.set_value(s); });
  auto future = result.get_future();
  ASSERT_EQ(future.wait_for(kWait), std::future_status::ready);
  EXPECT_EQ(future.get().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_FALSE(publisher.connected());
}

TEST_F(KafkaTransportTest, StopFailsEventsStillQueuedAsUnavailable) {
  cluster_.SetBrokerDown();
  settings_.delivery_timeout = std::chrono::milliseconds(60'000);
  settings_.flush_timeout = std::chrono::milliseconds(50);
  KafkaPublisher publisher(settings_, clock_, registry_);
  ASSERT_TRUE(publisher.Start().ok());
  std::promise<absl::Status> result;
  publisher.Publish(MakeSpecEvent("mmi", "cluster-a", 1),
                    [&result](absl::Status s) { result.set_value(s); });
  publisher.Stop();
  auto future = result.get_future();
  ASSERT_EQ(future.wait_for(std::chrono::seconds(0)), std::future_status::ready)
      << "Stop() must settle every callback before returning";
  EXPECT_EQ(future.get().code(), absl::StatusCode::kUnavailable);
}

TEST_F(KafkaTransportTest, SubscriberRedeliversWhatWasNotAcknowledged) {
  ProduceRaw({AgentRecord(1), AgentRecord(2), AgentRecord(3)});
  {
    KafkaSubscriber first(settings_, registry_);
    Recorder recorder(/*withhold=*/{2});
    ASSERT_TRUE(first.Start(recorder.Handler(), nullptr).ok());
    ASSERT_TRUE(recorder.WaitForCount(3));
    EXPECT_EQ(recorder.seqs(), (std::vector<int>{1, 2, 3}));
    first.Stop();
  }
  KafkaSubscriber second(settings_, registry_);
  Recorder recorder;
  ASSERT_TRUE(second.Start(recorder.Handler(), nullptr).ok());
  ASSERT_TRUE(recorder.WaitForCount(2));
  EXPECT_EQ(recorder.seqs(), (std::vector<int>{2, 3}));
  second.Stop();
}

TEST_F(KafkaTransportTest, SubscriberRejectsMalformedAndOversizeRecordsAndKeepsGoing) {
  cloudevents::KafkaRecord malformed = AgentRecord(1);
  malformed.headers.clear();  // no ce-specversion, no content type: not a CloudEvent
  cloudevents::KafkaRecord oversize = AgentRecord(2);
  oversize.value = std::string(2'048, 'x');
  ProduceRaw({malformed, oversize, AgentRecord(3)});
  settings_.limits.max_event_bytes = 1'500;
  KafkaSubscriber subscriber(settings_, registry_);
  Recorder recorder;
  std::atomic<int> subscribed{0};
  ASSERT_TRUE(subscriber
                  .Start(recorder.Handler(),
                         [&subscribed](bool resubscribed) { subscribed += resubscribed ? 100 : 1; })
                  .ok());
  ASSERT_TRUE(recorder.WaitForCount(1));
  EXPECT_EQ(recorder.seqs(), std::vector<int>{3});
  EXPECT_EQ(subscribed.load(), 1);
  EXPECT_EQ(MetricValue(registry_, "mmi_transport_messages_rejected_total",
                        {{"transport", "kafka"}, {"reason", "malformed"}}),
            1);
  EXPECT_EQ(MetricValue(registry_, "mmi_transport_messages_rejected_total",
                        {{"transport", "kafka"}, {"reason", "oversize"}}),
            1);
  EXPECT_EQ(MetricValue(registry_, "mmi_events_received_total",
                        {{"transport", "kafka"}, {"type", "status"}}),
            1);
  subscriber.Stop();
}

}  // namespace
}  // namespace mmi::transport
