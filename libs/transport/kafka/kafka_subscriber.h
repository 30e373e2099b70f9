// Subscriber over Kafka (librdkafka) in the final OCM scheme (maestro-protocol.md §5.1).
#pragma once

#include <librdkafka/rdkafkacpp.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "libs/common/log.h"
#include "libs/transport/internal/intake.h"
#include "libs/transport/kafka/internal/offset_tracker.h"
#include "libs/transport/metrics.h"
#include "libs/transport/settings.h"
#include "libs/transport/subscriber.h"
#include "prometheus/registry.h"

namespace mmi::transport {

// Consumes `agentEventsTopic` in consumer group `groupID` (default the source id), so replicas
// split the partitions. At-least-once: only acknowledged offsets are stored, and a partition's
// committed offset never passes its oldest unacknowledged event; offsets are committed every 5 s
// (auto-commit of stored offsets), on every partition revoke and at Stop(). An event whose ack
// never comes is redelivered to whichever group member owns the partition next. Per-cluster
// order: the handler sees one partition in offset order; a producer that keys by cluster (our
// Publisher does) keeps one cluster in one partition. Go agents send no key (§5.1), so with
// several partitions their status events of one cluster may interleave across partitions; use a
// single-partition topic or rely on `sequenceid` (§6.2).
//
// Threads: librdkafka's own and "kafka-consume" (fetch, rebalance, handler calls). Thread-safe.
class KafkaSubscriber final : public Subscriber {
 public:
  KafkaSubscriber(KafkaSettings settings, prometheus::Registry& registry);
  ~KafkaSubscriber() override;

  absl::Status Start(EventHandler handler, SubscribedHook on_subscribed) override;
  void Stop() override;
  bool connected() const override { return connected_.load(); }

 private:
  class Callbacks : public RdKafka::RebalanceCb, public RdKafka::EventCb {
   public:
    explicit Callbacks(KafkaSubscriber* owner) : owner_(owner) {}
    void rebalance_cb(RdKafka::KafkaConsumer* consumer, RdKafka::ErrorCode err,
                      std::vector<RdKafka::TopicPartition*>& partitions) override;
    void event_cb(RdKafka::Event& event) override;

   private:
    KafkaSubscriber* owner_;
  };

  void Loop();
  void Handle(RdKafka::Message& message);
  void OnRebalance(RdKafka::KafkaConsumer* consumer, RdKafka::ErrorCode err,
                   std::vector<RdKafka::TopicPartition*>& partitions);
  void OnEvent(RdKafka::Event& event);
  // Hands acknowledged offsets to librdkafka (committed by auto-commit or CommitNow()).
  void StoreAcked();
  void CommitNow();
  void SetConnected(bool connected);
  void Probe();

  const KafkaSettings settings_;
  internal::IntakeLog intake_log_;
  TransportMetrics metrics_;
  Callbacks rd_callbacks_{this};
  // Shared with every AckFn handed out: acks may run after Stop() or even after this subscriber
  // is destroyed, and must then be harmless no-ops.
  std::shared_ptr<internal::OffsetTracker> tracker_ = std::make_shared<internal::OffsetTracker>();
  std::unique_ptr<RdKafka::KafkaConsumer> consumer_;
  std::thread thread_;
  std::atomic<bool> running_{false};
  std::atomic<bool> connected_{false};
  bool ever_subscribed_ = false;                        // consumer thread only
  std::chrono::steady_clock::time_point next_probe_{};  // consumer thread only

  absl::Mutex mu_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  EventHandler handler_;          // consumer thread only after Start()
  SubscribedHook on_subscribed_;  // consumer thread only after Start()
};

}  // namespace mmi::transport
