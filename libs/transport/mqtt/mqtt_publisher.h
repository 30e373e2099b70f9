// Publisher over MQTT 5 in Maestro's topic scheme (maestro-protocol.md §3): binary content mode,
// QoS 1 by default, one topic per cluster.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"
#include "libs/common/clock.h"
#include "libs/common/log.h"
#include "libs/transport/internal/serial_executor.h"
#include "libs/transport/metrics.h"
#include "libs/transport/mqtt/internal/mqtt_connection.h"
#include "libs/transport/mqtt/internal/publish_window.h"
#include "libs/transport/mqtt/mqtt_topics.h"
#include "libs/transport/publisher.h"
#include "libs/transport/settings.h"
#include "prometheus/registry.h"

namespace mmi::transport {

// Publishes each event to `sourceEvents` with `+` = its `clustername` (status resync for all
// clusters: `sourceBroadcast`). The callback gets OK on PUBACK (QoS 1) or once sent (QoS 0);
// kUnavailable when disconnected or when the connection drops before the PUBACK (the event may
// or may not have arrived: retrying is safe, receivers dedupe by `id`); kDeadlineExceeded when
// no PUBACK arrives within publishTimeout of the Publish() call; kResourceExhausted when 10,000
// events already wait (held back or awaiting their PUBACK: back-pressure); kInvalidArgument for
// events that cannot be routed or encoded.
//
// In-flight window: with QoS 1 at most the broker's Receive Maximum (from the last CONNACK,
// max_in_flight(); mosquitto: max_inflight_messages) events are handed to Paho at once. The
// rest wait here in call order (mmi_transport_publish_held) and go out as PUBACKs free slots:
// Paho C would hold them back itself but send one only when another command arrives or after up
// to a second. Held events fail with kUnavailable when the connection drops. QoS 0 has no PUBACK
// and no window (only the 10,000 cap).
//
// Per-cluster order: events are handed to Paho in call order (one sender thread, FIFO) and go
// out in that order on one connection, and the broker keeps per-topic order (one topic per
// cluster).
//
// Threads: Paho's own, "mqtt-conn" (reconnects, deadlines), "mqtt-pub-send" (hands held events
// to Paho) and "mqtt-pub-cb" (callbacks). Thread-safe; see Publisher for the lifecycle.
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

  // The most events ever handed to Paho at once (awaiting their PUBACK or their send).
  size_t PeakInFlightForTest() const;

 private:
  class DeliveryListener : public mqtt::iaction_listener {
   public:
    explicit DeliveryListener(MqttPublisher* owner) : owner_(owner) {}
    void on_success(const mqtt::token& token) override;
    void on_failure(const mqtt::token& token) override;

   private:
    MqttPublisher* owner_;
  };

  // Sets the in-flight window for the current connection: Receive Maximum (QoS 1) while
  // connected, 0 while not; returns whether connected. Runs on every (re)connect, loss and tick
  // ("mqtt-conn" or Paho's thread), so a value a race left behind lasts at most one tick.
  bool UpdateWindow();
  // "mqtt-pub-send": hands held events to Paho, oldest first, while the window has room.
  void SendLoop();

  const MqttSettings settings_;
  Clock& clock_;
  TransportMetrics metrics_;
  const MqttTopics topics_;
  internal::SerialExecutor callbacks_{"mqtt-pub-cb"};
  internal::PublishWindow<mqtt::message_ptr> window_;
  DeliveryListener listener_{this};
  std::unique_ptr<internal::MqttConnection> connection_;

  // Held shared by Publish() while it uses the client, exclusively by Start()/Stop().
  absl::Mutex lifecycle_mu_;
  bool started_ ABSL_GUARDED_BY(lifecycle_mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(lifecycle_mu_) = false;
  std::thread sender_;
};

}  // namespace mmi::transport
