// Publisher over Kafka (librdkafka) in the final OCM scheme (maestro-protocol.md §5.1, §5.3).
#pragma once

#include <librdkafka/rdkafkacpp.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "libs/common/clock.h"
#include "libs/common/log.h"
#include "libs/transport/internal/serial_executor.h"
#include "libs/transport/metrics.h"
#include "libs/transport/publisher.h"
#include "libs/transport/settings.h"
#include "prometheus/registry.h"

namespace mmi::transport {

// Produces every event, binary mode with `ce-` headers, to `sourceEventsTopic` through an
// idempotent producer (acks=all, no reordering or duplicates on internal retries). The record
// key is the event's `clustername` when keyByCluster is on (default), so one cluster's events
// share a partition and keep their order; the final OCM scheme uses no key (§5.1) and Go agents
// ignore it. The callback gets OK on the delivery report; librdkafka retries internally until
// deliveryTimeout (then kDeadlineExceeded), so Publish() also succeeds while the broker is down
// and the event waits in the producer queue (kResourceExhausted when that queue is full).
//
// Threads: librdkafka's own, "kafka-pub-poll" (delivery reports, connection probe) and
// "kafka-pub-cb" (callbacks). Thread-safe; see Publisher for the lifecycle.
class KafkaPublisher final : public Publisher {
 public:
  KafkaPublisher(KafkaSettings settings, Clock& clock, prometheus::Registry& registry);
  ~KafkaPublisher() override;

  absl::Status Start() override;
  void Publish(cloudevents::Event event, PublishCallback done) override;
  void Stop() override;
  bool connected() const override { return connected_.load(); }

 private:
  struct Delivery;

  class Callbacks : public RdKafka::DeliveryReportCb, public RdKafka::EventCb {
   public:
    explicit Callbacks(KafkaPublisher* owner) : owner_(owner) {}
    void dr_cb(RdKafka::Message& message) override;
    void event_cb(RdKafka::Event& event) override;

   private:
    KafkaPublisher* owner_;
  };

  void OnDelivery(RdKafka::Message& message);
  void OnEvent(RdKafka::Event& event);
  void Finish(std::unique_ptr<Delivery> delivery, absl::Status status);
  void PollLoop();
  void Probe();
  void SetConnected(bool connected);

  const KafkaSettings settings_;
  Clock& clock_;
  TransportMetrics metrics_;
  internal::SerialExecutor callbacks_{"kafka-pub-cb"};
  Callbacks rd_callbacks_{this};
  std::unique_ptr<RdKafka::Producer> producer_;
  std::thread poll_thread_;
  std::atomic<bool> polling_{false};
  std::atomic<bool> connected_{false};
  std::atomic<bool> ever_connected_{false};
  std::chrono::steady_clock::time_point next_probe_{};

  // Held shared by Publish() while it uses the producer, exclusively by Start()/Stop().
  absl::Mutex lifecycle_mu_;
  bool started_ ABSL_GUARDED_BY(lifecycle_mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(lifecycle_mu_) = false;
};

}  // namespace mmi::transport
