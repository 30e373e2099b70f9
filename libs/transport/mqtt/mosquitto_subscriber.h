// The MQTT 5 subscriber on libmosquitto: the status sink's and the dispatcher's intake of agent
// events (maestro-protocol.md §3), the default since issue #21 item 4 (`library`).
//
// Paho C, under MqttSubscriber, spends ~45 us of CPU per received 1.6 KB event before our code
// sees it: a receive thread that hands every message to a callback thread, and a debug heap that
// records every allocation in a tree (Debian builds Paho C without HIGH_PERFORMANCE). libmosquitto
// reads, decodes and acknowledges on the thread that calls it, here the connection's own
// ("mqtt-sub", internal/mosquitto_connection.h), which also runs the handler: nothing crosses a
// thread until the handler enqueues.
//
// Same contract as MqttSubscriber (subscriber.h): Clean Start or a persistent session
// (`sessionExpiry`), a SUBSCRIBE and the SubscribedHook after every connect, malformed and
// oversize messages rejected by internal::Intake.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "libs/common/log.h"
#include "libs/transport/internal/intake.h"
#include "libs/transport/metrics.h"
#include "libs/transport/mqtt/internal/mosquitto_connection.h"
#include "libs/transport/mqtt/mqtt_topics.h"
#include "libs/transport/settings.h"
#include "libs/transport/subscriber.h"
#include "prometheus/registry.h"

namespace mmi::transport {

// Thread-safe. Lifecycle: Start() once, Stop() (idempotent, not from the handler) before
// destruction. The handler and the hook run on the connection's thread.
class MosquittoSubscriber final : public Subscriber {
 public:
  MosquittoSubscriber(MqttSettings settings, prometheus::Registry& registry);
  ~MosquittoSubscriber() override;

  absl::Status Start(EventHandler handler, SubscribedHook on_subscribed) override;
  void Stop() override;
  bool connected() const override;

 private:
  // Connection thread only.
  void Subscribe();
  void OnSubscribed(int mid, absl::Span<const int> granted);
  void OnMessage(const mosquitto_message& message, const mqtt5__property* props);

  const MqttSettings settings_;
  internal::IntakeLog intake_log_;
  TransportMetrics metrics_;
  const MqttTopics topics_;
  std::unique_ptr<internal::MosquittoConnection> connection_;
  EventHandler handler_;          // set by Start(), then used on the connection thread only
  SubscribedHook on_subscribed_;  // likewise

  // Connection thread only.
  int subscribe_mid_ = -1;
  bool ever_subscribed_ = false;

  std::atomic<bool> subscribed_{false};
  mutable absl::Mutex mu_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace mmi::transport
