// The agent side of Maestro's MQTT binding (../shared/spec/maestro-protocol.md §3) for many
// simulated clusters over ONE Paho MQTT v5 connection.
//
// A real agent subscribes `sourceEvents` with its last `+` replaced by its own cluster name; one
// process simulating thousands of clusters instead subscribes the wildcard filter
// `sources/<source>/consumers/+/sourceevents` (plus `sourceBroadcast`, if set) and routes each
// message by the cluster segment of its topic. Each agent event is published, binary content
// mode (`ce-` User Properties), QoS 1, never retained, on `agentEvents` with its last `+`
// replaced by the event's `clustername` (and any remaining `+` by the source id), e.g.
// `sources/<source>/consumers/<cluster>/agentevents`. CONNECT uses MQTT 5 with Clean Start and
// no session expiry (§3.1); after every (re)connect and SUBACK the SubscribedHandler runs, so the
// agents send their spec resync requests (§6.5).
//
// Threads: "fleet-mqtt" connects, subscribes and reconnects with exponential backoff; Paho's own
// thread runs message and delivery callbacks. Thread-safe.
#pragma once

#include <mqtt/async_client.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "libs/cloudevents/codec_options.h"
#include "tools/fleet-sim/agent_transport.h"

namespace mmi::fleet_sim {

struct MqttAgentSettings {
  std::string broker_host;  // required, `host:port`
  std::string source_id;    // required, [a-z0-9-]+: the source whose topics the agents use
  // MQTT client id; must be unique per live connection. Default `fleet-sim-<random hex>`.
  std::string client_id;
  // Subscription filter for source events; its last `+` is the cluster segment.
  // Default `sources/<source_id>/consumers/+/sourceevents`.
  std::string source_events;
  // Publish pattern for agent events; last `+` = cluster, remaining `+` = source id.
  // Default `sources/<source_id>/consumers/+/agentevents`.
  std::string agent_events;
  // Extra subscription for status resync requests to all clusters. Default
  // `sources/<source_id>/sourcebroadcast`; "-" = do not subscribe.
  std::string source_broadcast;
  std::string username;          // optional
  std::string password;          // optional; never logged
  bool tls = false;              // `ssl://` instead of `tcp://`
  std::string ca_file;           // PEM bundle to verify the broker; empty = system roots
  std::string client_cert_file;  // PEM client certificate (mTLS)
  std::string client_key_file;   // PEM key of client_cert_file
  std::chrono::seconds keep_alive{60};
  std::chrono::seconds connect_timeout{10};
  int qos = 1;  // publish and subscribe QoS
  std::chrono::milliseconds reconnect_min{500};
  std::chrono::milliseconds reconnect_max{30'000};
  // Publishes awaiting their PUBACK. Publish() waits (up to max_in_flight_wait) while this many
  // are outstanding, so Paho's internal queues (searched linearly, under the lock its receive
  // path also takes) stay short during a cold start's burst of statuses. 0 = no limit.
  std::size_t max_in_flight = 5'000;
  std::chrono::milliseconds max_in_flight_wait{10'000};
  cloudevents::CodecLimits limits;
};

// kInvalidArgument naming the field (`mqtt.brokerHost`, ...) when unusable.
absl::Status ValidateMqttAgentSettings(const MqttAgentSettings& settings);
// The settings with empty topics and client id replaced by their defaults.
MqttAgentSettings ResolvedMqttAgentSettings(MqttAgentSettings settings);

// The cluster segment of `topic` received through subscription `filter` (the segment where the
// filter's last `+` is), or "" when the filter has no `+` or the topic does not match it.
std::string ClusterFromTopic(const std::string& filter, const std::string& topic);
// `pattern` with its last `+` replaced by `cluster` and any remaining `+` by `source_id`.
std::string AgentEventsTopic(const std::string& pattern, const std::string& cluster,
                             const std::string& source_id);

class MqttAgentTransport final : public AgentTransport {
 public:
  explicit MqttAgentTransport(MqttAgentSettings settings);
  ~MqttAgentTransport() override;
  MqttAgentTransport(const MqttAgentTransport&) = delete;
  MqttAgentTransport& operator=(const MqttAgentTransport&) = delete;

  absl::Status Start(ReceiveHandler on_receive, SubscribedHandler on_subscribed) override;
  void Publish(cloudevents::Event event, PublishDone done) override;
  void Stop() override;
  // Publishes awaiting their PUBACK.
  std::size_t InFlight() const;
  bool connected() const override { return connected_.load(); }

 private:
  class PendingPublish;

  void Loop();
  void Forget(PendingPublish* pending);
  // Runs every unsettled publish's callback with kUnavailable (`why`).
  void FailPending(const char* why);
  bool ConnectAndSubscribe();
  void OnMessage(const mqtt::const_message_ptr& message);

  const MqttAgentSettings settings_;
  std::vector<std::string> filters_;
  mqtt::connect_options options_;
  // Created by Start(), destroyed by Stop() (which ends every Paho callback). Publish() uses it
  // under a reader lock of client_mu_, Stop() destroys it under the writer lock; the loop
  // thread uses it unlocked and is joined first.
  absl::Mutex client_mu_;
  std::unique_ptr<mqtt::async_client> client_;
  std::atomic<bool> connected_{false};

  absl::Mutex mu_;  // guards the handlers' lifetime against Stop()
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  bool lost_ ABSL_GUARDED_BY(mu_) = false;
  ReceiveHandler on_receive_ ABSL_GUARDED_BY(mu_);
  SubscribedHandler on_subscribed_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;

  mutable absl::Mutex pending_mu_;
  std::map<PendingPublish*, std::unique_ptr<PendingPublish>> pending_ ABSL_GUARDED_BY(pending_mu_);
};

}  // namespace mmi::fleet_sim
