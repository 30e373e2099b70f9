// The agent side of Maestro's MQTT binding (../shared/spec/maestro-protocol.md §3) for many
// simulated clusters over ONE MQTT 5 connection, on libmosquitto (as the hub's publisher).
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
// Threads: libmosquitto's own (mosquitto_loop_start) connects, subscribes, reconnects with
// exponential backoff and runs every callback. Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "libs/cloudevents/codec_options.h"
#include "tools/fleet-sim/agent_transport.h"

struct mosquitto;
struct mosquitto_message;
struct mqtt5__property;

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
  bool tls = false;              // TLS to the broker
  std::string ca_file;           // PEM bundle to verify the broker; empty = system roots
  std::string client_cert_file;  // PEM client certificate (mTLS)
  std::string client_key_file;   // PEM key of client_cert_file
  std::chrono::seconds keep_alive{60};
  int qos = 1;  // publish and subscribe QoS
  std::chrono::milliseconds reconnect_min{500};
  std::chrono::milliseconds reconnect_max{30'000};
  // Publishes awaiting their PUBACK. Publish() waits (up to max_in_flight_wait) while this many
  // are outstanding, so that a cold start's burst of statuses waits here rather than in
  // libmosquitto's queue. 0 = no limit.
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
  static void OnConnect(mosquitto* mosq, void* self, int reason, int flags,
                        const mqtt5__property* props);
  static void OnSubscribe(mosquitto* mosq, void* self, int mid, int count, const int* granted,
                          const mqtt5__property* props);
  static void OnMessage(mosquitto* mosq, void* self, const mosquitto_message* message,
                        const mqtt5__property* props);
  static void OnPublish(mosquitto* mosq, void* self, int mid, int reason_code,
                        const mqtt5__property* props);
  static void OnDisconnect(mosquitto* mosq, void* self, int reason, const mqtt5__property* props);

  absl::Status Configure();
  // Runs every unsettled publish's callback with kUnavailable (`why`).
  void FailPending(const char* why);
  // Settles publish `mid`, now or, when its PUBACK came before Publish() recorded it, then.
  void Settle(int mid, absl::Status status);

  const MqttAgentSettings settings_;
  std::vector<std::string> filters_;
  // Created by Start(), destroyed by Stop() after libmosquitto's thread ended.
  mosquitto* mosq_ = nullptr;
  std::atomic<bool> connected_{false};

  absl::Mutex mu_;  // guards the handlers' lifetime against Stop()
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  bool ever_subscribed_ ABSL_GUARDED_BY(mu_) = false;
  int subscribe_mid_ ABSL_GUARDED_BY(mu_) = -1;
  ReceiveHandler on_receive_ ABSL_GUARDED_BY(mu_);
  SubscribedHandler on_subscribed_ ABSL_GUARDED_BY(mu_);

  mutable absl::Mutex pending_mu_;
  // libmosquitto message id -> its callback; and the outcomes of ids not recorded yet.
  std::unordered_map<int, PublishDone> pending_ ABSL_GUARDED_BY(pending_mu_);
  std::unordered_map<int, absl::Status> settled_early_ ABSL_GUARDED_BY(pending_mu_);
};

}  // namespace mmi::fleet_sim
