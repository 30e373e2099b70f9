// The agent side of a Maestro broker binding, for many simulated clusters over one connection:
// receives what sources send to the clusters and publishes what the agents answer.
// Implementations: MqttAgentTransport (Maestro's MQTT topic scheme, §3), KafkaAgentTransport
// (final Kafka scheme, §5.1), GrpcBrokerAgentTransport (Maestro's gRPC broker, §4.7).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

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
// A subscription that became active: the cue for the agents' spec resync requests (§6.5).
struct Subscription {
  // False the first time these clusters' subscription became active.
  bool reconnect = false;
  // The clusters whose subscription became active; empty = every simulated cluster (one
  // subscription serves them all, as over MQTT and Kafka). The gRPC broker has one Subscribe
  // stream per cluster, each of which can end and come back on its own.
  std::vector<std::string> clusters;
};
// Runs on a transport thread each time a subscription becomes active. Must only enqueue.
using SubscribedHandler = absl::AnyInvocable<void(Subscription subscription)>;
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
  // Clusters whose subscription is active, of `total`: all or none where one subscription serves
  // the whole fleet (MQTT, Kafka); the gRPC broker counts its per-cluster streams.
  virtual std::size_t SubscribedClusters(std::size_t total) const {
    return connected() ? total : 0;
  }
};

}  // namespace mmi::fleet_sim
