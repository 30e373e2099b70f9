// The services' MQTT 5 publisher, on libmosquitto, in Maestro's topic scheme
// (maestro-protocol.md §3). Why libmosquitto: docs/adr/0003-mqtt-on-libmosquitto.md.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "libs/common/clock.h"
#include "libs/transport/internal/serial_executor.h"
#include "libs/transport/metrics.h"
#include "libs/transport/mqtt/internal/mosquitto_connection.h"
#include "libs/transport/mqtt/internal/publish_window.h"
#include "libs/transport/mqtt/mqtt_topics.h"
#include "libs/transport/publisher.h"
#include "libs/transport/settings.h"
#include "prometheus/registry.h"

namespace mmi::transport {

// Each event goes to `sourceEvents` with `+` = its `clustername` (`sourceBroadcast` for a status
// resync of every cluster), binary content mode. OK on PUBACK (QoS 1) or once written (QoS 0);
// kUnavailable when disconnected or when the connection drops before the PUBACK;
// kDeadlineExceeded without PUBACK within publishTimeout of the Publish() call;
// kResourceExhausted when 10,000 events already wait; kInvalidArgument for events that cannot be
// routed or encoded; a PUBACK reason code >= 0x80: not authorized -> kPermissionDenied, quota
// exceeded -> kResourceExhausted, a rejected topic or payload -> kInvalidArgument, else
// kUnavailable.
//
// Publish() encodes on the caller's thread and queues; the connection's thread ("mqtt-pub")
// hands queued events to libmosquitto in call order, at most the broker's Receive Maximum
// (CONNACK) awaiting their PUBACK at once (`mmi_transport_publish_held` counts the rest), and
// reads the PUBACKs; callbacks run on "mqtt-pub-cb". Per-cluster order: one connection, handed in
// call order, and the broker keeps per-topic order.
//
// Thread-safe; see Publisher for the lifecycle.
class MosquittoPublisher final : public Publisher {
 public:
  // `clock` and `registry` must outlive the publisher.
  MosquittoPublisher(MqttSettings settings, Clock& clock, prometheus::Registry& registry);
  ~MosquittoPublisher() override;

  absl::Status Start() override;
  void Publish(cloudevents::Event event, PublishCallback done) override;
  void Stop() override;
  bool connected() const override;
  size_t max_in_flight() const override;

  // The most events ever handed to libmosquitto at once (awaiting their PUBACK).
  size_t PeakInFlightForTest() const;

 private:
  // Connection thread: hands held events to libmosquitto while the window has room.
  void SendHeld();
  // Connection thread: a PUBACK (or a QoS 0 publish written).
  void OnPublished(int mid, int reason_code);

  const MqttSettings settings_;
  Clock& clock_;
  TransportMetrics metrics_;
  const MqttTopics topics_;
  internal::SerialExecutor callbacks_{"mqtt-pub-cb"};
  internal::PublishWindow window_;
  std::unique_ptr<internal::MosquittoConnection> connection_;
  std::atomic<size_t> receive_maximum_{65'535};

  // Held shared by Publish() while it uses the connection, exclusively by Start()/Stop().
  absl::Mutex lifecycle_mu_;
  bool started_ ABSL_GUARDED_BY(lifecycle_mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(lifecycle_mu_) = false;

  // Connection thread only. libmosquitto message id -> our id, for the events of the current
  // connection; QoS 0 ids libmosquitto reported written inside mosquitto_publish_v5(), before
  // by_mid_ knew them.
  std::unordered_map<int, uint64_t> by_mid_;
  std::unordered_set<int> written_early_;
};

}  // namespace mmi::transport
