// Transport configuration: one plain struct per implementation and the variant that selects one
// (`transport.type: mqtt|grpc|kafka` plus one section per type). The service's config loader
// fills these from YAML (keys in parentheses) and calls ValidateTransportSettings() at start-up;
// the structs themselves never read files or the environment.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <variant>

#include "absl/status/status.h"
#include "libs/cloudevents/codec_options.h"
#include "libs/common/backoff.h"

namespace mmi::transport {

// TLS towards the broker/server. Paths are read when the transport starts.
struct TlsSettings {
  bool enabled = false;          // (enabled) use TLS; false = plaintext
  std::string ca_file;           // (caFile) PEM bundle to verify the server; empty = system roots
  std::string client_cert_file;  // (clientCertFile) PEM client certificate for mTLS; needs key
  std::string client_key_file;   // (clientKeyFile) PEM private key of client_cert_file
};

// MQTT topic patterns (maestro-protocol.md §3.2), validated with the spec's regular expressions.
// Empty patterns take the defaults shown, built from the source id.
struct MqttTopicSettings {
  // (sourceEvents) where this source publishes; `+` stands for the cluster name.
  // Default `sources/<sourceId>/consumers/+/sourceevents`. No `$share/` prefix.
  std::string source_events;
  // (agentEvents) subscription filter for agent events; source segment = source id, cluster
  // segment `+`. Default `$share/<sharedGroup>/sources/<sourceId>/consumers/+/agentevents`
  // (without the prefix when shared_group is empty).
  std::string agent_events;
  // (sourceBroadcast) optional: status resync requests with `clustername` "" go here, e.g.
  // `sources/<sourceId>/sourcebroadcast`. Empty = not configured: such requests fail.
  std::string source_broadcast;
  // (agentBroadcast) optional extra subscription for agents' broadcast spec resync requests,
  // e.g. `$share/<group>/clusters/+/agentbroadcast`. Empty = not subscribed.
  std::string agent_broadcast;
};

struct MqttSettings {
  std::string broker_host;  // (brokerHost) required, `host:port`
  std::string source_id;    // (sourceId) required, [a-z0-9-]+; CloudEvent `source` of our events
  // (clientId) MQTT client id prefix, unique per replica (e.g. the pod name); the publisher uses
  // `<clientId>-pub`, the subscriber `<clientId>-sub`. Default `<sourceId>-<random hex>`.
  std::string client_id;
  // (sharedGroup) MQTT 5 shared-subscription group so that replicas split the status stream;
  // used only to build the default agent_events filter. Empty = every replica gets everything.
  std::string shared_group = "statussubscribers";
  std::string username;                               // (username) optional
  std::string password;                               // (password) optional; never logged
  TlsSettings tls;                                    // (tls) `ssl://` instead of `tcp://`
  std::chrono::seconds keep_alive{60};                // (keepAlive) MQTT keep-alive
  std::chrono::milliseconds dial_timeout{60'000};     // (dialTimeout) connect timeout
  std::chrono::milliseconds publish_timeout{30'000};  // (publishTimeout) wait for PUBACK
  int pub_qos = 1;                                    // (pubQoS) 0 or 1
  int sub_qos = 1;                                    // (subQoS) 0 or 1
  // (sessionExpiry) 0 = the subscriber connects with Clean Start, as the Go clients do (§3.1).
  // Otherwise it keeps a persistent MQTT 5 session for this long after a disconnect, under the
  // stable client id `<sourceId>-<sharedGroup>-sub` (clientId is not used for it), so the broker
  // holds its subscription and queues what arrives while no replica is subscribed (a restart, a
  // leader handover), and a new leader resumes it. The dispatcher sets it: an agent's spec resync
  // request sent meanwhile is answered instead of lost. Queued messages count against the
  // broker's per-client queue limit (mosquitto `max_queued_messages`); with subQoS 0 a broker
  // keeps the subscription but may queue nothing.
  std::chrono::seconds session_expiry{0};
  MqttTopicSettings topics;  // (topics)
  // (reconnectBackoff) delay between connection attempts.
  BackoffSettings reconnect_backoff{std::chrono::milliseconds(1'000),
                                    std::chrono::milliseconds(60'000), 2.0, 0.2};
  cloudevents::CodecLimits limits;  // (limits) largest accepted/produced event
};

struct GrpcSettings {
  // (url) required, `host:port` of Maestro's gRPC *source* server (Service `maestro-grpc`,
  // port 8090, §4.7); an optional `dns:///` prefix is kept.
  std::string url;
  std::string source_id;  // (sourceId) required; SubscriptionRequest.source and event `source`
  // (dataType) SubscriptionRequest.data_type.
  std::string data_type = "io.open-cluster-management.works.v1alpha1.manifestbundles";
  TlsSettings tls;  // (tls) Maestro accepts TLS 1.3 only (§4.7)
  // (token) bearer token sent as `authorization: Bearer <token>` on every call; needs TLS.
  std::string bearer_token;
  // (tokenFile) file holding the bearer token instead (e.g. a projected service-account token,
  // which the kubelet rotates): read at start, again every minute and after Maestro refused the
  // token, so a rotated or corrected token is picked up without a restart. Needs TLS; not with
  // `token`.
  std::string token_file;
  std::chrono::milliseconds publish_timeout{30'000};  // (publishTimeout) per Publish call
  // (maxInFlight) Publish calls open at once at most (GrpcPublisher::max_in_flight(), which
  // bounds the dispatcher's outbox). Maestro serves an update with two of its database
  // connections at once (an advisory-lock transaction, then a read), and with
  // --db-max-open-connections (default 50) or more updates in flight each holds one and waits for
  // a second: nothing moves until the calls' deadlines (docs/reliability.md, the gRPC row).
  std::size_t max_in_flight = 16;
  // (keepAliveTime) HTTP/2 ping interval while a stream is open; 0 = off, else >= 5s (§4.8).
  std::chrono::milliseconds keep_alive_time{30'000};
  std::chrono::milliseconds keep_alive_timeout{10'000};  // (keepAliveTimeout)
  // (idleTimeout) gRPC's client idle timeout: with no call open for this long the channel closes
  // its connection and goes IDLE (the publisher wakes it again at once). 0 = never, our default;
  // gRPC releases after 1.51 default to 30 min. When set, >= 1 s (gRPC's floor).
  std::chrono::milliseconds idle_timeout{0};
  // (serverHealthinessTimeout) reconnect when the Subscribe stream carried no event and no
  // heartbeat for this long; 0 = off. Maestro sends a heartbeat every 10 s by default (§4.6).
  std::chrono::milliseconds heartbeat_timeout{0};
  // (maxReceiveBytes) client receive limit; status events echo the spec, so above 4 MiB (§8.20).
  std::size_t max_receive_bytes = std::size_t{64} * 1024 * 1024;
  // (reconnectBackoff) Subscribe re-dial delay: 5 s growing to 1 min with jitter, as Go (§4.9).
  BackoffSettings reconnect_backoff{std::chrono::milliseconds(5'000),
                                    std::chrono::milliseconds(60'000), 2.0, 0.2};
  cloudevents::CodecLimits limits;  // (limits) 4 MiB default = Maestro's receive limit
};

struct KafkaSaslSettings {
  std::string mechanism;  // (mechanism) PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512; empty = no SASL
  std::string username;   // (username)
  std::string password;   // (password) never logged
};

struct KafkaSettings {
  std::string bootstrap_servers;  // (bootstrapServer) required, `host:port[,host:port...]`
  std::string source_id;          // (sourceId) required; event `source`
  std::string group_id;           // (groupID) consumer group; default = source id (§5.1)
  std::string source_events_topic = "sourceevents";  // (sourceEventsTopic) we produce here
  std::string agent_events_topic = "agentevents";    // (agentEventsTopic) we consume here
  // (keyByCluster) record key = `clustername`, so one cluster's events stay in one partition and
  // in order. The final OCM scheme sends no key (§5.1); Go agents ignore keys, so this only
  // changes partitioning. false = null key, exactly as Go.
  bool key_by_cluster = true;
  TlsSettings tls;         // (tls) security.protocol=ssl (sasl_ssl with SASL)
  KafkaSaslSettings sasl;  // (sasl)
  // (advancedConfig) any librdkafka property, applied last (overrides ours).
  std::map<std::string, std::string> advanced_config;
  // (deliveryTimeout) librdkafka message.timeout.ms: a produce not acknowledged by then fails
  // with kDeadlineExceeded.
  std::chrono::milliseconds delivery_timeout{30'000};
  std::chrono::milliseconds flush_timeout{10'000};  // (flushTimeout) Stop() waits this long
  cloudevents::CodecLimits limits;                  // (limits)
};

// The topics actually used: `settings.topics` with empty patterns replaced by their defaults.
MqttTopicSettings ResolvedMqttTopics(const MqttSettings& settings);

// Exactly one transport; the factory (factory.h) visits it.
using TransportSettings = std::variant<MqttSettings, GrpcSettings, KafkaSettings>;

// "mqtt" | "grpc" | "kafka": the `transport.type` value and the `transport` metric label.
std::string_view TransportName(const TransportSettings& settings);

// kInvalidArgument listing every problem, each prefixed with the full field path under `path`
// (e.g. `transport.mqtt.brokerHost: must be host:port, got "broker"`), joined by "; ".
absl::Status ValidateMqttSettings(const MqttSettings& settings,
                                  std::string_view path = "transport.mqtt");
absl::Status ValidateGrpcSettings(const GrpcSettings& settings,
                                  std::string_view path = "transport.grpc");
absl::Status ValidateKafkaSettings(const KafkaSettings& settings,
                                   std::string_view path = "transport.kafka");
absl::Status ValidateTransportSettings(const TransportSettings& settings,
                                       std::string_view path = "transport");

// The settings with secrets (passwords, tokens) replaced by "<redacted>", as one JSON-ish line
// for the start-up info log.
std::string RedactedSummary(const TransportSettings& settings);

}  // namespace mmi::transport
