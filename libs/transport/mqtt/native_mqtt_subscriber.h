// The services' MQTT 5 subscriber, on the project's own connection
// (internal/native_mqtt_connection.h; why: docs/adr/0004-mqtt-receive-path-of-our-own.md).
//
// Clean Start or a persistent session (`sessionExpiry`), a SUBSCRIBE and the SubscribedHook after
// every connect, malformed and oversize messages rejected by internal::Intake (subscriber.h).
#pragma once

#include <atomic>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "libs/cloudevents/mqtt_codec.h"
#include "libs/common/log.h"
#include "libs/transport/internal/intake.h"
#include "libs/transport/metrics.h"
#include "libs/transport/mqtt/internal/native_mqtt_connection.h"
#include "libs/transport/mqtt/mqtt_topics.h"
#include "libs/transport/settings.h"
#include "libs/transport/subscriber.h"
#include "prometheus/registry.h"

namespace mmi::transport {

// Thread-safe. Lifecycle: Start() once, Stop() (idempotent, not from the handler) before
// destruction. The handler and the hook run on the connection's thread ("mqtt-sub").
class NativeMqttSubscriber final : public Subscriber {
 public:
  NativeMqttSubscriber(MqttSettings settings, prometheus::Registry& registry);
  ~NativeMqttSubscriber() override;

  absl::Status Start(EventHandler handler, SubscribedHook on_subscribed) override;
  void Stop() override;
  bool connected() const override;

 private:
  // Connection thread only.
  void Subscribe();
  void OnSubAck(const internal::mqtt5::SubAck& suback);
  void OnPublish(const internal::mqtt5::Publish& publish);

  const MqttSettings settings_;
  internal::IntakeLog intake_log_;
  TransportMetrics metrics_;
  const MqttTopics topics_;
  std::unique_ptr<internal::NativeMqttConnection> connection_;
  EventHandler handler_;          // set by Start(), then used on the connection thread only
  SubscribedHook on_subscribed_;  // likewise

  // Connection thread only.
  uint16_t subscribe_id_ = 0;
  bool ever_subscribed_ = false;
  cloudevents::MqttMessage message_;  // reused, so that its strings keep their capacity

  std::atomic<bool> subscribed_{false};
  mutable absl::Mutex mu_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace mmi::transport
