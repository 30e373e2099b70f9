// The agent side of a Maestro broker binding, for many simulated clusters over one connection:
// receives what sources send to the clusters and publishes what the agents answer.
// Implementations: MqttAgentTransport (Maestro's MQTT topic scheme, §3), KafkaAgentTransport
// (final Kafka scheme, §5.1).
#pragma once

#include <string>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "libs/cloudevents/event.h"

namespace mmi::fleet_sim {

// One received message: the cluster segment of the topic it arrived on ("" when the binding has
// none, e.g. Kafka or a broadcast topic) and the decoded event, or the decode error.
struct ReceivedEvent {
  std::string topic_cluster;
  absl::StatusOr<cloudevents::Event> event;
};

// Runs on a transport thread for every received message; must only enqueue.
using ReceiveHandler = absl::AnyInvocable<void(ReceivedEvent received)>;
// Runs on a transport thread each time the subscription becomes active (`reconnect` false the
// first time): the cue for the agents' spec resync requests (§6.5). Must only enqueue.
using SubscribedHandler = absl::AnyInvocable<void(bool reconnect)>;
// Outcome of one publish; runs on a transport thread; must only count or enqueue.
using PublishDone = absl::AnyInvocable<void(absl::Status) &&>;

// Thread-safe. Lifecycle: Start() once, Stop() (idempotent) before destruction.
class AgentTransport {
 public:
  virtual ~AgentTransport() = default;
  // Starts connecting in the background (reconnecting forever). kInvalidArgument for unusable
  // settings; never fails because the broker is down.
  virtual absl::Status Start(ReceiveHandler on_receive, SubscribedHandler on_subscribed) = 0;
  // Non-blocking. Routes the agent's event (status event or spec resync request) by its
  // `clustername`. `done` gets kUnavailable while disconnected, kInvalidArgument when the event
  // cannot be encoded or routed.
  virtual void Publish(cloudevents::Event event, PublishDone done) = 0;
  // Idempotent; no handler runs after it returns.
  virtual void Stop() = 0;
  virtual bool connected() const = 0;
};

}  // namespace mmi::fleet_sim
