// Subscriber over MQTT 5 in Maestro's topic scheme (maestro-protocol.md §3).
#pragma once

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "libs/common/log.h"
#include "libs/transport/internal/intake.h"
#include "libs/transport/metrics.h"
#include "libs/transport/mqtt/internal/mqtt_connection.h"
#include "libs/transport/mqtt/mqtt_topics.h"
#include "libs/transport/settings.h"
#include "libs/transport/subscriber.h"
#include "prometheus/registry.h"

namespace mmi::transport {

// Subscribes `agentEvents` (by default with a `$share/<group>/` prefix so that replicas split the
// stream) and `agentBroadcast` when configured, at subQoS, after every (re)connect; Clean Start
// means nothing is queued while we are away, so the SubscribedHook(resubscribed=true) is the cue
// for a status resync. Messages are decoded (binary or structured mode) in arrival order on
// Paho's callback thread; per-cluster order holds because the broker keeps per-topic order and
// every cluster has its own topic (with a shared subscription a broker may still spread one
// topic over replicas: status events carry `sequenceid` for that case, §6.2). The ack is a no-op:
// Paho acknowledges QoS 1 on receipt and MQTT cannot redeliver after Clean Start.
//
// Threads: Paho's own (handler calls) and "mqtt-conn" (reconnects, SUBSCRIBE). Thread-safe.
class MqttSubscriber final : public Subscriber {
 public:
  MqttSubscriber(MqttSettings settings, prometheus::Registry& registry);
  ~MqttSubscriber() override;

  absl::Status Start(EventHandler handler, SubscribedHook on_subscribed) override;
  void Stop() override;
  bool connected() const override;

 private:
  class SubscribeListener : public mqtt::iaction_listener {
   public:
    explicit SubscribeListener(MqttSubscriber* owner) : owner_(owner) {}
    void on_success(const mqtt::token& token) override;
    void on_failure(const mqtt::token& token) override;

   private:
    MqttSubscriber* owner_;
  };

  void Subscribe(bool reconnect);
  void OnSubscribed(const mqtt::token& token);
  void OnMessage(const mqtt::const_message_ptr& message);

  const MqttSettings settings_;
  internal::IntakeLog intake_log_;
  TransportMetrics metrics_;
  const MqttTopics topics_;
  SubscribeListener listener_{this};
  std::unique_ptr<internal::MqttConnection> connection_;

  // Held while the handler or the hook runs, so that Stop() can wait for them.
  mutable absl::Mutex mu_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  bool subscribed_ ABSL_GUARDED_BY(mu_) = false;
  bool pending_reconnect_ ABSL_GUARDED_BY(mu_) = false;
  EventHandler handler_ ABSL_GUARDED_BY(mu_);
  SubscribedHook on_subscribed_ ABSL_GUARDED_BY(mu_);
};

}  // namespace mmi::transport
