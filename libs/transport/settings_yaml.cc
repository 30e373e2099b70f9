#include "libs/transport/settings_yaml.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace mmi::transport {
namespace {

void ReadTls(config::YamlSection parent, TlsSettings& tls) {
  config::YamlSection t = parent.Section("tls");
  const bool explicit_enabled = t.Has("enabled");
  t.Scalar("enabled", tls.enabled);
  t.Scalar("caFile", tls.ca_file);
  t.Scalar("clientCertFile", tls.client_cert_file);
  t.Scalar("clientKeyFile", tls.client_key_file);
  // A CA or a client certificate implies TLS unless `enabled` says otherwise.
  if (!explicit_enabled && (!tls.ca_file.empty() || !tls.client_cert_file.empty())) {
    tls.enabled = true;
  }
}

void ReadMqtt(config::YamlSection c, MqttSettings& m) {
  c.Scalar("brokerHost", m.broker_host);
  c.Scalar("sourceId", m.source_id);
  c.Scalar("clientId", m.client_id);
  c.Scalar("sharedGroup", m.shared_group);
  c.Scalar("username", m.username);
  c.Scalar("password", m.password);
  ReadTls(c, m.tls);
  c.Duration("keepAlive", m.keep_alive);
  c.Duration("dialTimeout", m.dial_timeout);
  c.Duration("publishTimeout", m.publish_timeout);
  c.Scalar("pubQoS", m.pub_qos);
  c.Scalar("subQoS", m.sub_qos);
  c.Duration("sessionExpiry", m.session_expiry);
  if (c.Has("library")) {
    // Removed with the Paho client (issue 39): fail rather than ignore a client choice that can no
    // longer be honoured.
    c.Error("library",
            "removed: MQTT publishes on libmosquitto and receives on the services' own MQTT 5 "
            "client, with no choice left (docs/adr/0003, 0004); delete this setting");
  }
  config::YamlSection t = c.Section("topics");
  t.Scalar("sourceEvents", m.topics.source_events);
  t.Scalar("agentEvents", m.topics.agent_events);
  t.Scalar("sourceBroadcast", m.topics.source_broadcast);
  t.Scalar("agentBroadcast", m.topics.agent_broadcast);
}

void ReadGrpc(config::YamlSection c, GrpcSettings& g) {
  c.Scalar("url", g.url);
  c.Scalar("sourceId", g.source_id);
  c.Scalar("dataType", g.data_type);
  ReadTls(c, g.tls);
  c.Scalar("token", g.bearer_token);
  c.Scalar("tokenFile", g.token_file);
  c.Duration("publishTimeout", g.publish_timeout);
  c.Scalar("maxInFlight", g.max_in_flight);
  c.Duration("keepAliveTime", g.keep_alive_time);
  c.Duration("keepAliveTimeout", g.keep_alive_timeout);
  c.Duration("idleTimeout", g.idle_timeout);
  c.Duration("serverHealthinessTimeout", g.heartbeat_timeout);
  c.Scalar("maxReceiveBytes", g.max_receive_bytes);
}

void ReadKafka(config::YamlSection c, KafkaSettings& k) {
  c.Scalar("bootstrapServer", k.bootstrap_servers);
  c.Scalar("sourceId", k.source_id);
  c.Scalar("groupID", k.group_id);
  c.Scalar("sourceEventsTopic", k.source_events_topic);
  c.Scalar("agentEventsTopic", k.agent_events_topic);
  c.Scalar("keyByCluster", k.key_by_cluster);
  ReadTls(c, k.tls);
  config::YamlSection s = c.Section("sasl");
  s.Scalar("mechanism", k.sasl.mechanism);
  s.Scalar("username", k.sasl.username);
  s.Scalar("password", k.sasl.password);
  c.StringMap("advancedConfig", k.advanced_config);
  c.Duration("deliveryTimeout", k.delivery_timeout);
  c.Duration("flushTimeout", k.flush_timeout);
}

}  // namespace

void ReadTransportSettings(config::YamlSection section, TransportSettings& out) {
  std::string type = "mqtt";
  section.Scalar("type", type);
  // Every section is read, so that a misspelt key fails even in a section not in use.
  MqttSettings mqtt;
  ReadMqtt(section.Section("mqtt"), mqtt);
  GrpcSettings grpc;
  ReadGrpc(section.Section("grpc"), grpc);
  KafkaSettings kafka;
  ReadKafka(section.Section("kafka"), kafka);
  if (type == "mqtt") {
    out = std::move(mqtt);
  } else if (type == "grpc") {
    out = std::move(grpc);
  } else if (type == "kafka") {
    out = std::move(kafka);
  } else {
    section.Error("type", absl::StrCat("must be mqtt, grpc or kafka, got '", type, "'"));
  }
}

void ApplyTransportSecrets(TransportSettings& settings, const std::optional<std::string>& password,
                           const std::optional<std::string>& token) {
  if (password && !password->empty()) {
    if (auto* m = std::get_if<MqttSettings>(&settings)) {
      m->password = *password;
    } else if (auto* k = std::get_if<KafkaSettings>(&settings)) {
      k->sasl.password = *password;
    }
  }
  if (token && !token->empty()) {
    if (auto* g = std::get_if<GrpcSettings>(&settings)) {
      g->bearer_token = *token;
    }
  }
}

std::string& SourceIdOf(TransportSettings& settings) {
  return std::visit([](auto& s) -> std::string& { return s.source_id; }, settings);
}

}  // namespace mmi::transport
