// The agent side of the final OCM Kafka scheme (../shared/spec/maestro-protocol.md §5.1, §5.3)
// for many simulated clusters over one consumer and one producer (librdkafka C++).
//
// Consumes `sourceevents` (every cluster's spec events and status resync requests) in one
// consumer group for the whole simulated fleet; the Fleet routes each event by its `clustername`
// and each agent drops events for other clusters, as the Go agent does. Produces status events and
// spec resync requests to `agentevents`, binary mode (`ce-` headers), with no key (the final Go
// scheme). The SubscribedHandler runs on every partition assignment (first: reconnect=false), so
// the agents send their spec resync requests.
//
// Threads: "fleet-kafka" polls the consumer and the producer (delivery reports run there).
// Thread-safe.
#pragma once

#include <librdkafka/rdkafkacpp.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "libs/cloudevents/codec_options.h"
#include "tools/fleet-sim/agent_transport.h"

namespace mmi::fleet_sim {

struct KafkaAgentSettings {
  std::string bootstrap_servers;  // required, `host:port[,host:port...]`
  // Consumer group of the simulated fleet. Default `fleet-sim-<random hex>`: every run reads
  // the topic on its own, like the per-agent groups of §5.1.
  std::string group_id;
  std::string source_events_topic = "sourceevents";  // consumed
  std::string agent_events_topic = "agentevents";    // produced
  // Where a new group starts: `earliest` as the Go SDK (§5.4), or `latest`.
  std::string auto_offset_reset = "earliest";
  std::chrono::milliseconds delivery_timeout{30'000};
  // Any librdkafka property for both clients, applied last.
  std::map<std::string, std::string> advanced_config;
  cloudevents::CodecLimits limits;
};

// kInvalidArgument naming the field (`kafka.bootstrapServers`, ...) when unusable.
absl::Status ValidateKafkaAgentSettings(const KafkaAgentSettings& settings);

class KafkaAgentTransport final : public AgentTransport {
 public:
  explicit KafkaAgentTransport(KafkaAgentSettings settings);
  ~KafkaAgentTransport() override;
  KafkaAgentTransport(const KafkaAgentTransport&) = delete;
  KafkaAgentTransport& operator=(const KafkaAgentTransport&) = delete;

  absl::Status Start(ReceiveHandler on_receive, SubscribedHandler on_subscribed) override;
  void Publish(cloudevents::Event event, PublishDone done) override;
  void Stop() override;
  bool connected() const override { return connected_.load(); }

 private:
  // librdkafka callback objects (rdkafkacpp names, hence the snake_case overrides).
  class Callbacks final : public RdKafka::DeliveryReportCb,
                          public RdKafka::RebalanceCb,
                          public RdKafka::EventCb {
   public:
    explicit Callbacks(KafkaAgentTransport* owner) : owner_(owner) {}
    void dr_cb(RdKafka::Message& message) override;
    void rebalance_cb(RdKafka::KafkaConsumer* consumer, RdKafka::ErrorCode err,
                      std::vector<RdKafka::TopicPartition*>& partitions) override;
    void event_cb(RdKafka::Event& event) override;

   private:
    KafkaAgentTransport* owner_;
  };

  void Loop();

  KafkaAgentSettings settings_;
  Callbacks callbacks_{this};
  std::unique_ptr<RdKafka::KafkaConsumer> consumer_;
  std::unique_ptr<RdKafka::Producer> producer_;
  std::atomic<bool> connected_{false};
  std::atomic<bool> running_{false};
  bool ever_assigned_ = false;  // consumer thread only

  absl::Mutex mu_;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  ReceiveHandler on_receive_ ABSL_GUARDED_BY(mu_);
  SubscribedHandler on_subscribed_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace mmi::fleet_sim
