// The transport contract suite's view of one transport: the source-side clients under test, a
// raw AGENT-side client of the same broker (libmosquitto / librdkafka used directly, events encoded
// with the libs/cloudevents codecs), and broker control.
#pragma once

#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "libs/cloudevents/event.h"
#include "libs/common/clock.h"
#include "libs/transport/factory.h"
#include "prometheus/registry.h"

namespace mmi::transport::contract {

// One instance per test. Methods that assert are void (gtest), the test checks HasFailure().
class Harness {
 public:
  virtual ~Harness() = default;

  // The `transport` metric label.
  virtual std::string name() const = 0;
  // Starts (or reuses) the broker and the agent side; `source_id` is unique per test.
  virtual void SetUp(const std::string& source_id) = 0;
  // Fresh, unstarted source-side clients (a second call models a service restart: same
  // settings, same consumer group).
  virtual TransportClients MakeClients(Clock& clock, prometheus::Registry& registry) = 0;

  // Agent side.
  virtual void AgentSend(const cloudevents::Event& event) = 0;  // a status-type event
  virtual void AgentSendMalformed() = 0;  // a message that is not a CloudEvent
  virtual void AgentSendOversize() = 0;   // a message above the transport's size limit
  // Every event the source published that the agent side received so far, decoded.
  virtual std::vector<cloudevents::Event> AgentReceived() = 0;

  // Stops and restarts the broker on the same address (gRPC: resets every stream, see the
  // harness); returns once it accepts connections again.
  virtual void RestartBroker() = 0;

  // Makes the next MakeClients() keep what agents send while no subscriber runs, for the next
  // subscriber of the same service (MQTT: a persistent session, sessionExpiry; Kafka: always, by
  // the consumer group's committed offsets). False when the transport has no such thing.
  virtual bool UsePersistentSession() { return false; }
  // Whether the clients count mmi_transport_reconnects_total (every real transport does).
  virtual bool CountsReconnects() const { return true; }
  // Whether an event whose ack was never called is delivered again to the next subscriber.
  virtual bool RedeliversUnacked() const = 0;
  // Whether events published back to back (without waiting for callbacks) keep their per-cluster
  // order. gRPC unary calls are independent streams: callers serialise per resource instead.
  virtual bool PipelinedPublishKeepsOrder() const { return true; }
  // What the connected publisher's max_in_flight() must be: the broker's limit on events awaiting
  // acknowledgement (MQTT 5 Receive Maximum), the gRPC publisher's own bound, or unbounded.
  virtual size_t PublisherMaxInFlight() const { return std::numeric_limits<size_t>::max(); }
};

std::unique_ptr<Harness> MakeFakeHarness();
std::unique_ptr<Harness> MakeGrpcHarness();
// The publisher and the subscriber on the project's own MQTT 5 client.
std::unique_ptr<Harness> MakeMqttHarness();
std::unique_ptr<Harness> MakeKafkaHarness();

}  // namespace mmi::transport::contract
