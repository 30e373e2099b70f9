#include "libs/transport/settings.h"

#include <cstdint>
#include <regex>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "libs/cloudevents/event.h"

namespace mmi::transport {
namespace {

// Collects "path.field: problem" lines.
class Problems {
 public:
  explicit Problems(std::string_view path) : path_(path) {}
  void Add(std::string_view field, std::string_view problem) {
    lines_.push_back(absl::StrCat(path_, ".", std::string(field), ": ", std::string(problem)));
  }
  absl::Status ToStatus() const {
    if (lines_.empty()) {
      return absl::OkStatus();
    }
    return absl::InvalidArgumentError(absl::StrJoin(lines_, "; "));
  }

 private:
  std::string path_;
  std::vector<std::string> lines_;
};

std::string Quoted(std::string_view text) { return absl::StrCat("\"", std::string(text), "\""); }

bool IsHostPort(std::string_view text) {
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == text.size()) {
    return false;
  }
  int port = 0;
  if (!absl::SimpleAtoi(std::string(text.substr(colon + 1)), &port)) {
    return false;
  }
  const std::string_view host = text.substr(0, colon);
  return port > 0 && port <= 65535 && host.find_first_of(" /\t") == std::string_view::npos;
}

bool MatchesFully(const std::string& text, const char* pattern) {
  return std::regex_match(text, std::regex(pattern));
}

// Segment names of MQTT topics: [a-z0-9-]+ (§3.2).
bool IsTopicSegment(const std::string& text) { return MatchesFully(text, "[a-z0-9-]+"); }

void CheckTls(const TlsSettings& tls, Problems& problems) {
  if (!tls.enabled &&
      (!tls.ca_file.empty() || !tls.client_cert_file.empty() || !tls.client_key_file.empty())) {
    problems.Add("tls.enabled", "must be true when TLS files are configured");
  }
  if (tls.client_cert_file.empty() != tls.client_key_file.empty()) {
    problems.Add(tls.client_cert_file.empty() ? "tls.clientCertFile" : "tls.clientKeyFile",
                 "client certificate and key must be set together (mTLS)");
  }
}

void CheckBackoff(const BackoffSettings& backoff, std::string_view field, Problems& problems) {
  const std::string f(field);
  if (backoff.initial.count() <= 0) {
    problems.Add(f + ".initial", "must be > 0");
  }
  if (backoff.max < backoff.initial) {
    problems.Add(f + ".max", "must be >= initial");
  }
  if (backoff.multiplier < 1.0) {
    problems.Add(f + ".multiplier", "must be >= 1");
  }
  if (backoff.jitter < 0.0 || backoff.jitter > 1.0) {
    problems.Add(f + ".jitter", "must be in [0, 1]");
  }
}

void CheckLimits(const cloudevents::CodecLimits& limits, Problems& problems) {
  if (limits.max_event_bytes == 0) {
    problems.Add("limits.maxEventBytes", "must be > 0");
  }
  if (limits.max_json_depth <= 0) {
    problems.Add("limits.maxJsonDepth", "must be > 0");
  }
}

// The spec's regular expressions (§3.2), with the groups: 1 = $share prefix, 2 = word,
// 3 = source id or +, 4 = word, 5 = cluster or +.
constexpr char kSourceEventsPattern[] =
    R"(^(\$share/[a-z0-9-]+/)?([a-z]+)/([a-z0-9-]+|\+)/([a-z]+)/([a-z0-9-]+|\+)/sourceevents$)";
constexpr char kAgentEventsPattern[] =
    R"(^(\$share/[a-z0-9-]+/)?([a-z]+)/([a-z0-9-]+|\+)/([a-z]+)/([a-z0-9-]+|\+)/agentevents$)";
constexpr char kSourceBroadcastPattern[] =
    R"(^(\$share/[a-z0-9-]+/)?([a-z]+)/([a-z0-9-]+|\+)/sourcebroadcast$)";
constexpr char kAgentBroadcastPattern[] =
    R"(^(\$share/[a-z0-9-]+/)?([a-z]+)/([a-z0-9-]+|\+)/agentbroadcast$)";

void CheckMqttTopics(const MqttSettings& settings, Problems& problems) {
  const MqttTopicSettings topics = ResolvedMqttTopics(settings);
  std::smatch m;
  if (!std::regex_match(topics.source_events, m, std::regex(kSourceEventsPattern))) {
    problems.Add("topics.sourceEvents", absl::StrCat("must match ", kSourceEventsPattern, ", got ",
                                                     Quoted(topics.source_events)));
  } else {
    if (m[1].matched) {
      problems.Add("topics.sourceEvents", "a publish topic cannot have a $share/ prefix");
    }
    if (m[3].str() != settings.source_id) {
      problems.Add("topics.sourceEvents",
                   absl::StrCat("source segment must be the source id ", Quoted(settings.source_id),
                                ", got ", Quoted(m[3].str())));
    }
    if (m[5].str() != "+") {
      problems.Add("topics.sourceEvents", "cluster segment must be + (replaced per event)");
    }
  }
  if (!std::regex_match(topics.agent_events, m, std::regex(kAgentEventsPattern))) {
    problems.Add("topics.agentEvents", absl::StrCat("must match ", kAgentEventsPattern, ", got ",
                                                    Quoted(topics.agent_events)));
  } else {
    if (m[3].str() != settings.source_id) {
      problems.Add("topics.agentEvents",
                   absl::StrCat("source segment must be the source id ", Quoted(settings.source_id),
                                ", got ", Quoted(m[3].str())));
    }
    if (m[5].str() != "+") {
      problems.Add("topics.agentEvents", "cluster segment must be + (all clusters)");
    }
  }
  if (!topics.source_broadcast.empty()) {
    if (!std::regex_match(topics.source_broadcast, m, std::regex(kSourceBroadcastPattern))) {
      problems.Add("topics.sourceBroadcast",
                   absl::StrCat("must match ", kSourceBroadcastPattern, ", got ",
                                Quoted(topics.source_broadcast)));
    } else if (m[1].matched) {
      problems.Add("topics.sourceBroadcast", "a publish topic cannot have a $share/ prefix");
    } else if (m[3].str() != "+" && m[3].str() != settings.source_id) {
      problems.Add("topics.sourceBroadcast", "source segment must be + or the source id");
    }
  }
  if (!topics.agent_broadcast.empty() &&
      !std::regex_match(topics.agent_broadcast, m, std::regex(kAgentBroadcastPattern))) {
    problems.Add("topics.agentBroadcast", absl::StrCat("must match ", kAgentBroadcastPattern,
                                                       ", got ", Quoted(topics.agent_broadcast)));
  }
}

}  // namespace

std::string_view TransportName(const TransportSettings& settings) {
  struct Visitor {
    std::string_view operator()(const MqttSettings&) const { return "mqtt"; }
    std::string_view operator()(const GrpcSettings&) const { return "grpc"; }
    std::string_view operator()(const KafkaSettings&) const { return "kafka"; }
  };
  return std::visit(Visitor{}, settings);
}

MqttTopicSettings ResolvedMqttTopics(const MqttSettings& settings) {
  MqttTopicSettings topics = settings.topics;
  if (topics.source_events.empty()) {
    topics.source_events =
        absl::StrCat("sources/", settings.source_id, "/consumers/+/sourceevents");
  }
  if (topics.agent_events.empty()) {
    const std::string share =
        settings.shared_group.empty() ? "" : absl::StrCat("$share/", settings.shared_group, "/");
    topics.agent_events =
        absl::StrCat(share, "sources/", settings.source_id, "/consumers/+/agentevents");
  }
  return topics;
}

absl::Status ValidateMqttSettings(const MqttSettings& settings, std::string_view path) {
  Problems problems(path);
  if (!IsHostPort(settings.broker_host)) {
    problems.Add("brokerHost",
                 absl::StrCat("must be host:port, got ", Quoted(settings.broker_host)));
  }
  const bool source_ok = IsTopicSegment(settings.source_id);
  if (!source_ok) {
    problems.Add("sourceId",
                 absl::StrCat("must match [a-z0-9-]+ (it is an MQTT topic segment), got ",
                              Quoted(settings.source_id)));
  }
  if (settings.client_id.size() > 200 ||
      settings.client_id.find_first_of(" \t\r\n") != std::string::npos) {
    problems.Add("clientId", "must be at most 200 characters without whitespace");
  }
  if (!settings.shared_group.empty() && !IsTopicSegment(settings.shared_group)) {
    problems.Add("sharedGroup",
                 absl::StrCat("must match [a-z0-9-]+, got ", Quoted(settings.shared_group)));
  }
  if (!settings.password.empty() && settings.username.empty()) {
    problems.Add("username", "must be set when a password is set");
  }
  // MQTT strings carry a two-byte length (MQTT 5 §1.5.4).
  if (settings.username.size() > 65'535) {
    problems.Add("username", "must be at most 65,535 bytes");
  }
  if (settings.password.size() > 65'535) {
    problems.Add("password", "must be at most 65,535 bytes");
  }
  CheckTls(settings.tls, problems);
  if (settings.keep_alive.count() < 0 || settings.keep_alive.count() > 65535) {
    problems.Add("keepAlive", "must be between 0s and 65535s");
  }
  if (settings.dial_timeout.count() <= 0) {
    problems.Add("dialTimeout", "must be > 0");
  }
  if (settings.publish_timeout.count() <= 0) {
    problems.Add("publishTimeout", "must be > 0");
  }
  if (settings.pub_qos != 0 && settings.pub_qos != 1) {
    problems.Add("pubQoS", "must be 0 or 1");
  }
  if (settings.sub_qos != 0 && settings.sub_qos != 1) {
    problems.Add("subQoS", "must be 0 or 1");
  }
  if (settings.session_expiry.count() < 0 || settings.session_expiry.count() > INT32_MAX) {
    problems.Add("sessionExpiry", "must be between 0s (Clean Start) and 68 years");
  }
  if (source_ok) {
    CheckMqttTopics(settings, problems);
  }
  CheckBackoff(settings.reconnect_backoff, "reconnectBackoff", problems);
  CheckLimits(settings.limits, problems);
  return problems.ToStatus();
}

absl::Status ValidateGrpcSettings(const GrpcSettings& settings, std::string_view path) {
  Problems problems(path);
  std::string_view target = settings.url;
  if (target.substr(0, 7) == "dns:///") {
    target.remove_prefix(7);
  }
  if (!IsHostPort(target)) {
    problems.Add("url", absl::StrCat("must be host:port (optionally dns:///host:port), got ",
                                     Quoted(settings.url)));
  }
  if (settings.source_id.empty() ||
      settings.source_id.find_first_of(" \t\r\n/") != std::string::npos) {
    problems.Add("sourceId", absl::StrCat("must be a non-empty id without whitespace or '/', got ",
                                          Quoted(settings.source_id)));
  }
  if (!cloudevents::DataType::Parse(settings.data_type).ok()) {
    problems.Add("dataType", absl::StrCat("must be <group>.<version>.<resource>, got ",
                                          Quoted(settings.data_type)));
  }
  CheckTls(settings.tls, problems);
  if (!settings.bearer_token.empty() && !settings.tls.enabled) {
    problems.Add("token", "needs tls.enabled: a bearer token is never sent in plaintext");
  }
  if (!settings.token_file.empty() && !settings.tls.enabled) {
    problems.Add("tokenFile", "needs tls.enabled: a bearer token is never sent in plaintext");
  }
  if (!settings.token_file.empty() && !settings.bearer_token.empty()) {
    problems.Add("tokenFile", "set either token or tokenFile, not both");
  }
  if (settings.publish_timeout.count() <= 0) {
    problems.Add("publishTimeout", "must be > 0");
  }
  if (settings.max_in_flight == 0) {
    problems.Add("maxInFlight", "must be >= 1");
  }
  if (settings.keep_alive_time.count() != 0 && settings.keep_alive_time.count() < 5'000) {
    problems.Add("keepAliveTime",
                 "must be 0 (off) or >= 5s: Maestro disconnects clients that ping more often");
  }
  if (settings.keep_alive_timeout.count() <= 0) {
    problems.Add("keepAliveTimeout", "must be > 0");
  }
  if (settings.idle_timeout.count() != 0 && settings.idle_timeout.count() < 1'000) {
    problems.Add("idleTimeout", "must be 0 (never idle) or >= 1s (gRPC's floor)");
  }
  if (settings.heartbeat_timeout.count() < 0) {
    problems.Add("serverHealthinessTimeout", "must be >= 0");
  }
  if (settings.max_receive_bytes < std::size_t{4} * 1024 * 1024) {
    problems.Add("maxReceiveBytes", "must be >= 4 MiB: status events echo the whole spec");
  }
  CheckBackoff(settings.reconnect_backoff, "reconnectBackoff", problems);
  CheckLimits(settings.limits, problems);
  return problems.ToStatus();
}

absl::Status ValidateKafkaSettings(const KafkaSettings& settings, std::string_view path) {
  Problems problems(path);
  bool servers_ok = !settings.bootstrap_servers.empty();
  for (absl::string_view server : absl::StrSplit(settings.bootstrap_servers, ',')) {
    servers_ok = servers_ok && IsHostPort(std::string_view(server.data(), server.size()));
  }
  if (!servers_ok) {
    problems.Add("bootstrapServer", absl::StrCat("must be host:port[,host:port...], got ",
                                                 Quoted(settings.bootstrap_servers)));
  }
  if (settings.source_id.empty()) {
    problems.Add("sourceId", "must be set");
  }
  const char* kTopic = "[a-zA-Z0-9._-]{1,249}";
  if (!MatchesFully(settings.source_events_topic, kTopic)) {
    problems.Add("sourceEventsTopic", absl::StrCat("must match ", kTopic, ", got ",
                                                   Quoted(settings.source_events_topic)));
  }
  if (!MatchesFully(settings.agent_events_topic, kTopic)) {
    problems.Add("agentEventsTopic", absl::StrCat("must match ", kTopic, ", got ",
                                                  Quoted(settings.agent_events_topic)));
  }
  CheckTls(settings.tls, problems);
  const std::string& mechanism = settings.sasl.mechanism;
  if (!mechanism.empty()) {
    if (mechanism != "PLAIN" && mechanism != "SCRAM-SHA-256" && mechanism != "SCRAM-SHA-512") {
      problems.Add(
          "sasl.mechanism",
          absl::StrCat("must be PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512, got ", Quoted(mechanism)));
    }
    if (settings.sasl.username.empty() || settings.sasl.password.empty()) {
      problems.Add("sasl.username", "username and password must be set with a SASL mechanism");
    }
  } else if (!settings.sasl.username.empty() || !settings.sasl.password.empty()) {
    problems.Add("sasl.mechanism", "must be set when a SASL username or password is set");
  }
  for (const auto& [key, value] : settings.advanced_config) {
    if (key.empty()) {
      problems.Add("advancedConfig", "keys must not be empty");
    }
  }
  if (settings.delivery_timeout.count() <= 0) {
    problems.Add("deliveryTimeout", "must be > 0");
  }
  if (settings.flush_timeout.count() < 0) {
    problems.Add("flushTimeout", "must be >= 0");
  }
  CheckLimits(settings.limits, problems);
  return problems.ToStatus();
}

absl::Status ValidateTransportSettings(const TransportSettings& settings, std::string_view path) {
  const std::string prefix(path);
  struct Visitor {
    const std::string& prefix;
    absl::Status operator()(const MqttSettings& s) const {
      return ValidateMqttSettings(s, prefix + ".mqtt");
    }
    absl::Status operator()(const GrpcSettings& s) const {
      return ValidateGrpcSettings(s, prefix + ".grpc");
    }
    absl::Status operator()(const KafkaSettings& s) const {
      return ValidateKafkaSettings(s, prefix + ".kafka");
    }
  };
  return std::visit(Visitor{prefix}, settings);
}

std::string RedactedSummary(const TransportSettings& settings) {
  auto redact = [](const std::string& secret) { return secret.empty() ? "" : "<redacted>"; };
  auto tls = [](const TlsSettings& t) {
    return absl::StrCat("tls={enabled=", t.enabled ? "true" : "false", ", caFile=", t.ca_file,
                        ", clientCertFile=", t.client_cert_file,
                        ", clientKeyFile=", t.client_key_file, "}");
  };
  struct Visitor {
    decltype(redact)& r;
    decltype(tls)& t;
    std::string operator()(const MqttSettings& s) const {
      const MqttTopicSettings topics = ResolvedMqttTopics(s);
      return absl::StrCat(
          "mqtt{brokerHost=", s.broker_host, ", sourceId=", s.source_id, ", clientId=", s.client_id,
          ", username=", s.username, ", password=", r(s.password), ", ", t(s.tls),
          ", sourceEvents=", topics.source_events, ", agentEvents=", topics.agent_events,
          ", sourceBroadcast=", topics.source_broadcast,
          ", agentBroadcast=", topics.agent_broadcast, "}");
    }
    std::string operator()(const GrpcSettings& s) const {
      return absl::StrCat("grpc{url=", s.url, ", sourceId=", s.source_id,
                          ", dataType=", s.data_type, ", token=", r(s.bearer_token),
                          ", tokenFile=", s.token_file, ", ", t(s.tls), "}");
    }
    std::string operator()(const KafkaSettings& s) const {
      std::string advanced;
      for (const auto& [key, value] : s.advanced_config) {
        const bool secret = key.find("password") != std::string::npos ||
                            key.find("secret") != std::string::npos ||
                            key.find("jaas") != std::string::npos;
        absl::StrAppend(&advanced, advanced.empty() ? "" : ",", key, "=",
                        secret ? r(value) : value);
      }
      return absl::StrCat(
          "kafka{bootstrapServer=", s.bootstrap_servers, ", sourceId=", s.source_id,
          ", groupID=", s.group_id, ", sourceEventsTopic=", s.source_events_topic,
          ", agentEventsTopic=", s.agent_events_topic, ", sasl.mechanism=", s.sasl.mechanism,
          ", sasl.username=", s.sasl.username, ", sasl.password=", r(s.sasl.password), ", ",
          t(s.tls), ", advancedConfig={", advanced, "}}");
    }
  };
  return std::visit(Visitor{redact, tls}, settings);
}

}  // namespace mmi::transport
