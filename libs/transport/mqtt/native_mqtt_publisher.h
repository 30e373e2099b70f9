// The services' MQTT 5 publisher, in Maestro's topic scheme (maestro-protocol.md §3), on the
// project's own connection (internal/native_mqtt_connection.h), as the subscriber: why, and the
// measurements, in docs/adr/0003-mqtt-on-libmosquitto.md and 0004.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "libs/common/clock.h"
#include "libs/transport/internal/serial_executor.h"
#include "libs/transport/metrics.h"
#include "libs/transport/mqtt/internal/native_mqtt_connection.h"
#include "libs/transport/mqtt/internal/publish_window.h"
#include "libs/transport/mqtt/mqtt_topics.h"
#include "libs/transport/publisher.h"
#include "libs/transport/settings.h"
#include "prometheus/registry.h"

namespace mmi::transport {

// Each event goes to its MqttTopics::PublishTopic(), binary content mode. OK on PUBACK (QoS 1) or
// once queued on the connection (QoS 0);
// kUnavailable when disconnected or when the connection drops before the PUBACK;
// kDeadlineExceeded without PUBACK within publishTimeout of the Publish() call;
// kResourceExhausted when 10,000 events already wait; kInvalidArgument for events that cannot be
// routed or encoded, or above the broker's Maximum Packet Size; a PUBACK reason code >= 0x80: not
// authorized -> kPermissionDenied, quota exceeded -> kResourceExhausted, a rejected topic or
// payload -> kInvalidArgument, else kUnavailable.
//
// Publish() encodes on the caller's thread and queues; the connection's thread ("mqtt-pub")
// writes queued events in call order, at most the broker's Receive Maximum (CONNACK) awaiting
// their PUBACK at once (`mmi_transport_publish_held` counts the rest), and reads the PUBACKs;
// callbacks run on "mqtt-pub-cb". Per-cluster order: one connection, written in call order, and
// the broker keeps per-topic order.
//
// Thread-safe; see Publisher for the lifecycle.
class NativeMqttPublisher final : public Publisher {
 public:
  // `clock` and `registry` must outlive the publisher.
  NativeMqttPublisher(MqttSettings settings, Clock& clock, prometheus::Registry& registry);
  ~NativeMqttPublisher() override;

  absl::Status Start() override;
  void Publish(cloudevents::Event event, PublishCallback done) override;
  void Stop() override;
  bool connected() const override;
  size_t max_in_flight() const override;

  // The most events ever written at once awaiting their PUBACK.
  size_t PeakInFlightForTest() const;

 private:
  // Connection thread: queues held events on the connection while the window has room.
  void SendHeld();
  void OnPubAck(const internal::mqtt5::PubAck& puback);

  const MqttSettings settings_;
  Clock& clock_;
  TransportMetrics metrics_;
  const MqttTopics topics_;
  internal::SerialExecutor callbacks_{"mqtt-pub-cb"};
  internal::PublishWindow window_;
  std::unique_ptr<internal::NativeMqttConnection> connection_;
  std::atomic<size_t> receive_maximum_{65'535};

  // Held shared by Publish() while it uses the connection, exclusively by Start()/Stop().
  absl::Mutex lifecycle_mu_;
  bool started_ ABSL_GUARDED_BY(lifecycle_mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(lifecycle_mu_) = false;

  // Connection thread only: the broker's Maximum Packet Size (0: none), and packet id -> our id
  // for the events of the current connection awaiting their PUBACK.
  std::size_t max_packet_bytes_ = 0;
  absl::flat_hash_map<uint16_t, uint64_t> by_packet_id_;
};

}  // namespace mmi::transport
