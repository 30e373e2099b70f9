// sink_publisher: plays a fleet of work agents for bench/sink. Encodes every status event first
// (status_events.h, the MQTT or Kafka binary mode of libs/cloudevents), then publishes them as
// fast as the broker takes them (MQTT QoS 1 on several connections, each with a window of
// unacknowledged publishes; Kafka with librdkafka's batching) and prints its rate as the last line:
// "published <n> events/s <rate>".
// `--prepare` only creates the Kafka topic (before the sink's consumer joins).
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafkacpp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "bench/sink/status_events.h"
#include "libs/cloudevents/kafka_codec.h"
#include "libs/cloudevents/mqtt_codec.h"
#include "libs/transport/mqtt/testing/mqtt_test_client.h"

namespace mmi::bench {
namespace {

struct Options {
  std::string transport = "mqtt";
  std::string broker;
  std::size_t events = 10'000;
  std::size_t connections = 4;  // MQTT
  bool prepare = false;
  EventShape shape;
};

// Unacknowledged QoS 1 publishes at most per connection (libmosquitto itself keeps the broker's
// receive maximum, mosquitto's 20, in flight and queues the rest).
constexpr std::size_t kMqttWindow = 64;

std::vector<cloudevents::Event> Events(const Options& o) {
  const std::size_t entries = EntriesForSize(o.shape);
  std::vector<cloudevents::Event> events;
  events.reserve(o.events);
  for (std::size_t n = 0; n < o.events; ++n) {
    events.push_back(BenchStatusEvent(o.shape, entries, n));
  }
  return events;
}

// Publishes `messages` on `client` keeping at most kMqttWindow unacknowledged. False when the
// broker stopped acknowledging.
bool PublishWindowed(transport::testing::MqttTestClient& client, const std::string& topic,
                     const std::vector<cloudevents::MqttMessage>& messages) {
  for (std::size_t n = 0; n < messages.size(); ++n) {
    if (n >= kMqttWindow && !client.AwaitPubacks(n - kMqttWindow + 1, std::chrono::seconds(30))) {
      return false;
    }
    if (!client.PublishNoWait(topic, messages[n])) {
      return false;
    }
  }
  return client.AwaitPubacks(messages.size(), std::chrono::seconds(30));
}

// Several connections, as agents are many: each resource's events go in order on one of them.
double PublishMqtt(const Options& o) {
  const std::string topic =
      "sources/" + o.shape.source_id + "/consumers/" + o.shape.cluster + "/agentevents";
  const std::size_t n_clients = std::max<std::size_t>(1, o.connections);
  std::vector<std::vector<cloudevents::MqttMessage>> messages(n_clients);
  const std::vector<cloudevents::Event> events = Events(o);
  for (std::size_t n = 0; n < events.size(); ++n) {
    messages[(n % o.shape.resources) % n_clients].push_back(*cloudevents::EncodeMqtt(events[n]));
  }
  std::vector<std::unique_ptr<transport::testing::MqttTestClient>> clients;
  for (std::size_t i = 0; i < n_clients; ++i) {
    auto client = transport::testing::MqttTestClient::Connect(
        {.host_port = o.broker, .client_id = "mmi-bench-agent-" + std::to_string(i)});
    if (!client.ok()) {
      std::fprintf(stderr, "mqtt publisher %zu: %s\n", i, client.status().ToString().c_str());
      std::exit(1);
    }
    clients.push_back(*std::move(client));
  }
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  std::atomic<int> failed{0};
  for (std::size_t i = 0; i < n_clients; ++i) {
    threads.emplace_back([&, i] {
      if (!PublishWindowed(*clients[i], topic, messages[i])) {  // a lost broker: say so
        std::fprintf(stderr, "mqtt publisher %zu: no PUBACK within 30 s\n", i);
        ++failed;
      }
    });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  if (failed.load() > 0) {
    std::fprintf(stderr, "%d of %zu MQTT connections failed\n", failed.load(), n_clients);
    std::exit(1);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  clients.clear();  // DISCONNECT
  return static_cast<double>(events.size()) / seconds;
}

std::unique_ptr<RdKafka::Producer> KafkaProducer(const std::string& broker) {
  std::string error;
  std::unique_ptr<RdKafka::Conf> conf(RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"bootstrap.servers", broker},
           {"linger.ms", "5"},
           {"queue.buffering.max.messages", "1000000"},
           {"queue.buffering.max.kbytes", "2097152"}}) {
    if (conf->set(key, value, error) != RdKafka::Conf::CONF_OK) {
      std::fprintf(stderr, "kafka %s: %s\n", key.c_str(), error.c_str());
      std::exit(2);
    }
  }
  std::unique_ptr<RdKafka::Producer> producer(RdKafka::Producer::create(conf.get(), error));
  if (!producer) {
    std::fprintf(stderr, "kafka producer: %s\n", error.c_str());
    std::exit(2);
  }
  return producer;
}

// The agentevents topic with one partition (what the status sink consumes).
void CreateTopic(RdKafka::Producer& producer) {
  char error[512];
  rd_kafka_t* rk = producer.c_ptr();
  rd_kafka_NewTopic_t* topic = rd_kafka_NewTopic_new(
      std::string(cloudevents::kKafkaAgentEventsTopic).c_str(), 1, 1, error, sizeof(error));
  rd_kafka_queue_t* queue = rd_kafka_queue_new(rk);
  rd_kafka_CreateTopics(rk, &topic, 1, nullptr, queue);
  rd_kafka_event_t* event = rd_kafka_queue_poll(queue, 60'000);
  if (event != nullptr) {
    rd_kafka_event_destroy(event);
  }
  rd_kafka_queue_destroy(queue);
  rd_kafka_NewTopic_destroy(topic);
}

double PublishKafka(const Options& o) {
  auto producer = KafkaProducer(o.broker);
  if (o.prepare) {
    CreateTopic(*producer);
    return 0;
  }
  std::vector<cloudevents::KafkaRecord> records;
  for (const auto& event : Events(o)) {
    records.push_back(*cloudevents::EncodeKafka(event));
  }
  const auto start = std::chrono::steady_clock::now();
  for (auto& record : records) {
    RdKafka::Headers* headers = RdKafka::Headers::create();
    for (const auto& [name, value] : record.headers) {
      headers->add(name, value);
    }
    while (producer->produce(record.topic, RdKafka::Topic::PARTITION_UA,
                             RdKafka::Producer::RK_MSG_COPY, record.value.data(),
                             record.value.size(), nullptr, 0, 0, headers,
                             nullptr) == RdKafka::ERR__QUEUE_FULL) {
      producer->poll(10);
    }
    producer->poll(0);
  }
  producer->flush(120'000);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return static_cast<double>(records.size()) / seconds;
}

}  // namespace
}  // namespace mmi::bench

int main(int argc, char** argv) {
  mmi::bench::Options o;
  CLI::App cli("sink_publisher: pre-encoded status events for bench/sink");
  cli.add_option("--transport", o.transport)->check(CLI::IsMember({"mqtt", "kafka"}));
  cli.add_option("--broker", o.broker, "host:port")->required();
  cli.add_option("--source-id", o.shape.source_id);
  cli.add_option("--cluster", o.shape.cluster);
  cli.add_option("--bytes", o.shape.target_bytes, "size of one event");
  cli.add_option("--resources", o.shape.resources)->check(CLI::PositiveNumber);
  cli.add_option("--events", o.events);
  cli.add_option("--connections", o.connections, "MQTT connections publishing at once");
  cli.add_flag("--prepare", o.prepare, "only create the Kafka topic");
  CLI11_PARSE(cli, argc, argv);
  const double rate =
      o.transport == "kafka" ? mmi::bench::PublishKafka(o) : mmi::bench::PublishMqtt(o);
  std::printf("published %zu events/s %.1f\n", o.prepare ? 0 : o.events, rate);
  return 0;
}
