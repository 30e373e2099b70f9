// Publisher over MQTT 5 in Maestro's topic scheme (maestro-protocol.md §3): binary content mode,
// QoS 1 by default, one topic per cluster.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "libs/common/clock.h"
#include "libs/common/log.h"
#include "libs/transport/internal/serial_executor.h"
#include "libs/transport/metrics.h"
#include "libs/transport/mqtt/internal/mqtt_connection.h"
#include "libs/transport/mqtt/mqtt_topics.h"
#include "libs/transport/publisher.h"
#include "libs/transport/settings.h"
#include "prometheus/registry.h"

namespace mmi::transport {

// Publishes each event to `sourceEvents` with `+` = its `clustername` (status resync for all
// clusters: `sourceBroadcast`). The callback gets OK on PUBACK (QoS 1) or once sent (QoS 0);
// kUnavailable when disconnected or when the connection drops before the PUBACK (the event may
// or may not have arrived: retrying is safe, receivers dedupe by `id`); kDeadlineExceeded when
// no PUBACK arrives within publishTimeout; kResourceExhausted when 10,000 events already wait
// for their PUBACK (back-pressure); kInvalidArgument for events that cannot be routed or
// encoded. Per-cluster order: events handed to Paho in call order go out in that order on one
// connection, and the broker keeps per-topic order (one topic per cluster).
//
// Threads: Paho's own, "mqtt-conn" (reconnects, deadlines) and "mqtt-pub-cb" (callbacks).
// Thread-safe; see Publisher for the lifecycle.
class MqttPublisher final : public Publisher {
 public:
  // `clock` and `registry` must outlive the publisher.
  MqttPublisher(MqttSettings settings, Clock& clock, prometheus::Registry& registry);
  ~MqttPublisher() override;

  absl::Status Start() override;
  void Publish(cloudevents::Event event, PublishCallback done) override;
  void Stop() override;
  bool connected() const override;
  size_t max_in_flight() const override;

 private:
  struct InFlight {
    PublishCallback done;
    std::chrono::steady_clock::time_point started;
    std::chrono::steady_clock::time_point deadline;
    std::string event_id;
  };

  class DeliveryListener : public mqtt::iaction_listener {
   public:
    explicit DeliveryListener(MqttPublisher* owner) : owner_(owner) {}
    void on_success(const mqtt::token& token) override;
    void on_failure(const mqtt::token& token) override;

   private:
    MqttPublisher* owner_;
  };

  // Completes the in-flight entry `id` (if still pending) with `status`.
  void Complete(uint64_t id, absl::Status status);
  // Completes a publish that never reached Paho.
  void Reject(PublishCallback done, absl::Status status,
              std::chrono::steady_clock::time_point started);
  void FailAllInFlight(const absl::Status& status);
  void ExpireDeadlines();

  const MqttSettings settings_;
  Clock& clock_;
  TransportMetrics metrics_;
  const MqttTopics topics_;
  internal::SerialExecutor callbacks_{"mqtt-pub-cb"};
  DeliveryListener listener_{this};
  std::unique_ptr<internal::MqttConnection> connection_;

  // Held shared by Publish() while it uses the client, exclusively by Start()/Stop().
  absl::Mutex lifecycle_mu_ ABSL_ACQUIRED_BEFORE(inflight_mu_);
  bool started_ ABSL_GUARDED_BY(lifecycle_mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(lifecycle_mu_) = false;

  absl::Mutex inflight_mu_;
  uint64_t next_id_ ABSL_GUARDED_BY(inflight_mu_) = 1;
  std::map<uint64_t, InFlight> inflight_ ABSL_GUARDED_BY(inflight_mu_);
};

}  // namespace mmi::transport
