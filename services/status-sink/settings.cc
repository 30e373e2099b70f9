#include "services/status-sink/settings.h"

#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <CLI/CLI.hpp>
#include <exception>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "libs/cloudevents/resource_id.h"
#include "libs/common/config.h"
#include "libs/common/log.h"
#include "libs/kube/leader_elector.h"

namespace mmi::status_sink {
namespace {

// Typed reads from YAML that collect every error with its full path.
class Reader {
 public:
  std::vector<std::string> errors;

  static YAML::Node Child(const YAML::Node& node, const char* key) {
    if (!node || !node.IsMap()) {
      return YAML::Node();
    }
    return node[key];
  }

  template <typename T>
  void Get(const YAML::Node& node, const char* key, const std::string& path, T& out) {
    const YAML::Node v = Child(node, key);
    if (!v || v.IsNull()) {
      return;
    }
    try {
      if (!v.IsScalar()) {
        throw YAML::Exception(YAML::Mark::null_mark(), "not a scalar");
      }
      out = v.as<T>();
    } catch (const std::exception&) {
      errors.push_back(absl::StrCat(path, ".", key, ": expected a ", Kind<T>(), ", got '",
                                    v.IsScalar() ? v.Scalar() : "<non-scalar>", "'"));
    }
  }

  template <typename D>
  void Duration(const YAML::Node& node, const char* key, const std::string& path, D& out) {
    std::string text;
    Get(node, key, path, text);
    if (text.empty()) {
      return;
    }
    auto parsed = config::ParseDuration(text);
    if (!parsed.ok()) {
      errors.push_back(absl::StrCat(path, ".", key, ": ", parsed.status().message()));
      return;
    }
    out = std::chrono::duration_cast<D>(*parsed);
  }

  void Tls(const YAML::Node& node, const std::string& path, transport::TlsSettings& tls) {
    const YAML::Node t = Child(node, "tls");
    const std::string p = path + ".tls";
    const bool explicit_enabled = Child(t, "enabled") && !Child(t, "enabled").IsNull();
    Get(t, "enabled", p, tls.enabled);
    Get(t, "caFile", p, tls.ca_file);
    Get(t, "clientCertFile", p, tls.client_cert_file);
    Get(t, "clientKeyFile", p, tls.client_key_file);
    if (!explicit_enabled && (!tls.ca_file.empty() || !tls.client_cert_file.empty())) {
      tls.enabled = true;
    }
  }

 private:
  template <typename T>
  static const char* Kind() {
    if constexpr (std::is_same_v<T, bool>) {
      return "boolean";
    } else if constexpr (std::is_integral_v<T>) {
      return "integer";
    } else if constexpr (std::is_floating_point_v<T>) {
      return "number";
    } else {
      return "string";
    }
  }
};

void ReadTransport(Reader& r, const YAML::Node& n, transport::TransportSettings& out) {
  std::string type = "mqtt";
  r.Get(n, "type", "transport", type);
  if (type == "mqtt") {
    transport::MqttSettings m;
    const YAML::Node c = Reader::Child(n, "mqtt");
    const std::string p = "transport.mqtt";
    r.Get(c, "brokerHost", p, m.broker_host);
    r.Get(c, "sourceId", p, m.source_id);
    r.Get(c, "clientId", p, m.client_id);
    r.Get(c, "sharedGroup", p, m.shared_group);
    r.Get(c, "username", p, m.username);
    r.Get(c, "password", p, m.password);
    r.Tls(c, p, m.tls);
    r.Duration(c, "keepAlive", p, m.keep_alive);
    r.Duration(c, "dialTimeout", p, m.dial_timeout);
    r.Duration(c, "publishTimeout", p, m.publish_timeout);
    r.Get(c, "pubQoS", p, m.pub_qos);
    r.Get(c, "subQoS", p, m.sub_qos);
    const YAML::Node t = Reader::Child(c, "topics");
    r.Get(t, "sourceEvents", p + ".topics", m.topics.source_events);
    r.Get(t, "agentEvents", p + ".topics", m.topics.agent_events);
    r.Get(t, "sourceBroadcast", p + ".topics", m.topics.source_broadcast);
    r.Get(t, "agentBroadcast", p + ".topics", m.topics.agent_broadcast);
    out = std::move(m);
  } else if (type == "grpc") {
    transport::GrpcSettings g;
    const YAML::Node c = Reader::Child(n, "grpc");
    const std::string p = "transport.grpc";
    r.Get(c, "url", p, g.url);
    r.Get(c, "sourceId", p, g.source_id);
    r.Get(c, "dataType", p, g.data_type);
    r.Tls(c, p, g.tls);
    r.Get(c, "token", p, g.bearer_token);
    r.Duration(c, "publishTimeout", p, g.publish_timeout);
    r.Duration(c, "keepAliveTime", p, g.keep_alive_time);
    r.Duration(c, "keepAliveTimeout", p, g.keep_alive_timeout);
    r.Duration(c, "serverHealthinessTimeout", p, g.heartbeat_timeout);
    r.Get(c, "maxReceiveBytes", p, g.max_receive_bytes);
    out = std::move(g);
  } else if (type == "kafka") {
    transport::KafkaSettings k;
    const YAML::Node c = Reader::Child(n, "kafka");
    const std::string p = "transport.kafka";
    r.Get(c, "bootstrapServer", p, k.bootstrap_servers);
    r.Get(c, "sourceId", p, k.source_id);
    r.Get(c, "groupID", p, k.group_id);
    r.Get(c, "sourceEventsTopic", p, k.source_events_topic);
    r.Get(c, "agentEventsTopic", p, k.agent_events_topic);
    r.Get(c, "keyByCluster", p, k.key_by_cluster);
    r.Tls(c, p, k.tls);
    const YAML::Node s = Reader::Child(c, "sasl");
    r.Get(s, "mechanism", p + ".sasl", k.sasl.mechanism);
    r.Get(s, "username", p + ".sasl", k.sasl.username);
    r.Get(s, "password", p + ".sasl", k.sasl.password);
    const YAML::Node adv = Reader::Child(c, "advancedConfig");
    if (adv && adv.IsMap()) {
      for (const auto& kv : adv) {
        try {
          k.advanced_config[kv.first.as<std::string>()] = kv.second.as<std::string>();
        } catch (const std::exception&) {
          r.errors.push_back(p + ".advancedConfig: values must be strings");
        }
      }
    }
    r.Duration(c, "deliveryTimeout", p, k.delivery_timeout);
    r.Duration(c, "flushTimeout", p, k.flush_timeout);
    out = std::move(k);
  } else {
    r.errors.push_back(
        absl::StrCat("transport.type: must be mqtt, grpc or kafka, got '", type, "'"));
  }
}

std::string& SourceIdOf(transport::TransportSettings& t) {
  return std::visit([](auto& s) -> std::string& { return s.source_id; }, t);
}

std::string Hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) {
    return "mmi-status-sink";
  }
  return buf;
}

}  // namespace

absl::StatusOr<StatusSinkSettings> ParseSettingsYaml(std::string_view yaml) {
  StatusSinkSettings s;
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("config file is not valid YAML: ", e.what()));
  }
  if (root && !root.IsNull() && !root.IsMap()) {
    return absl::InvalidArgumentError("config file: the top level must be a mapping");
  }
  Reader r;
  r.Get(root, "logLevel", "", s.log_level);
  r.Get(Reader::Child(root, "admin"), "listenAddress", "admin", s.admin_listen);

  const YAML::Node kube = Reader::Child(root, "kube");
  r.Get(kube, "kubeconfig", "kube", s.kube.kubeconfig);
  r.Get(kube, "context", "kube", s.kube.context);
  r.Get(kube, "qps", "kube", s.kube.qps);
  r.Get(kube, "burst", "kube", s.kube.burst);
  r.Duration(kube, "requestTimeout", "kube", s.kube.request_timeout);

  const YAML::Node store = Reader::Child(root, "store");
  r.Get(store, "dsn", "store", s.store.dsn);
  r.Get(store, "poolSize", "store", s.store.pool_size);
  r.Get(store, "migrate", "store", s.store.migrate);

  const YAML::Node le = Reader::Child(root, "leaderElection");
  r.Get(le, "enabled", "leaderElection", s.leader.enabled);
  r.Get(le, "namespace", "leaderElection", s.leader.lease_namespace);
  r.Get(le, "name", "leaderElection", s.leader.lease_name);
  r.Get(le, "identity", "leaderElection", s.leader.identity);
  r.Duration(le, "leaseDuration", "leaderElection", s.leader.lease_duration);
  r.Duration(le, "renewDeadline", "leaderElection", s.leader.renew_deadline);
  r.Duration(le, "retryPeriod", "leaderElection", s.leader.retry_period);

  ReadTransport(r, Reader::Child(root, "transport"), s.transport);

  const YAML::Node st = Reader::Child(root, "status");
  const std::string p = "status";
  r.Get(st, "intakeCapacity", p, s.sink.intake_capacity);
  r.Get(st, "maxInFlight", p, s.sink.max_in_flight);
  r.Get(st, "maxPending", p, s.sink.coalescer.max_pending);
  r.Duration(st, "volatileInterval", p, s.sink.coalescer.volatile_interval);
  r.Get(st, "ignoreResourceHealthMessages", p, s.sink.coalescer.ignore_resource_health_messages);
  r.Get(st, "persistBatch", p, s.sink.persist_batch);
  r.Duration(st, "persistInterval", p, s.sink.persist_interval);
  r.Duration(st, "countsInterval", p, s.sink.counts_interval);
  r.Get(st, "resyncChunk", p, s.sink.resync_chunk);
  r.Get(st, "maxStatusBytes", p, s.sink.patch.max_status_bytes);
  r.Get(st, "writers", p, s.writers);
  r.Get(st, "fieldManager", p, s.writer.field_manager);
  r.Duration(root, "shutdownTimeout", "", s.shutdown_timeout);

  if (!r.errors.empty()) {
    return absl::InvalidArgumentError(absl::StrJoin(r.errors, "; "));
  }
  return s;
}

void ApplyEnvironment(StatusSinkSettings& s, const EnvLookup& env) {
  if (auto v = env("MMI_STORE_DSN"); v && !v->empty()) {
    s.store.dsn = *v;
  }
  if (auto v = env("MMI_TRANSPORT_PASSWORD"); v && !v->empty()) {
    if (auto* m = std::get_if<transport::MqttSettings>(&s.transport)) {
      m->password = *v;
    } else if (auto* k = std::get_if<transport::KafkaSettings>(&s.transport)) {
      k->sasl.password = *v;
    }
  }
  if (auto v = env("MMI_TRANSPORT_TOKEN"); v && !v->empty()) {
    if (auto* g = std::get_if<transport::GrpcSettings>(&s.transport)) {
      g->bearer_token = *v;
    }
  }
  if (auto v = env("POD_NAME"); v && !v->empty() && s.leader.identity.empty()) {
    s.leader.identity = *v + "_" + cloudevents::NewUuidV4().substr(0, 8);
  }
  if (auto v = env("POD_NAMESPACE"); v && !v->empty() && s.leader.lease_namespace.empty()) {
    s.leader.lease_namespace = *v;
  }
  if (auto v = env("KUBECONFIG"); v && !v->empty() && s.kube.kubeconfig.empty()) {
    s.kube.kubeconfig = *v;
  }
  if (auto v = env("KUBERNETES_SERVICE_HOST")) {
    s.kube.in_cluster_host = *v;
  }
  if (auto v = env("KUBERNETES_SERVICE_PORT")) {
    s.kube.in_cluster_port = *v;
  }
}

absl::Status FinalizeSettings(StatusSinkSettings& s) {
  if (s.leader.identity.empty()) {
    s.leader.identity = Hostname() + "_" + cloudevents::NewUuidV4().substr(0, 8);
  }
  if (s.leader.lease_namespace.empty()) {
    s.leader.lease_namespace = "default";
  }
  s.sink.source_id = SourceIdOf(s.transport);

  std::vector<std::string> errors;
  if (!log::ParseLevel(s.log_level).ok()) {
    errors.push_back("logLevel: must be debug, info, warn or error, got '" + s.log_level + "'");
  }
  if (s.store.dsn.empty()) {
    errors.push_back("store.dsn: required (or env MMI_STORE_DSN)");
  }
  if (s.store.pool_size < 1) {
    errors.push_back("store.poolSize: must be at least 1");
  }
  if (s.kube.kubeconfig.empty() && s.kube.in_cluster_host.empty()) {
    errors.push_back(
        "kube.kubeconfig: required outside a cluster (or env KUBECONFIG / "
        "KUBERNETES_SERVICE_HOST)");
  }
  if (auto t = transport::ValidateTransportSettings(s.transport); !t.ok()) {
    errors.emplace_back(t.message());
  }
  if (s.leader.enabled) {
    kube::LeaderElectionSettings le{s.leader.lease_namespace, s.leader.lease_name,
                                    s.leader.identity,        s.leader.lease_duration,
                                    s.leader.renew_deadline,  s.leader.retry_period};
    if (auto l = kube::ValidateLeaderElectionSettings(le); !l.ok()) {
      errors.push_back(absl::StrCat("leaderElection: ", l.message()));
    }
  }
  if (s.sink.intake_capacity < 1) {
    errors.push_back("status.intakeCapacity: must be at least 1");
  }
  if (s.sink.max_in_flight < 1) {
    errors.push_back("status.maxInFlight: must be at least 1");
  }
  if (s.sink.coalescer.max_pending < 1) {
    errors.push_back("status.maxPending: must be at least 1");
  }
  if (s.sink.persist_batch < 1) {
    errors.push_back("status.persistBatch: must be at least 1");
  }
  if (s.sink.resync_chunk < 1) {
    errors.push_back("status.resyncChunk: must be at least 1");
  }
  if (s.sink.patch.max_status_bytes < 1024) {
    errors.push_back("status.maxStatusBytes: must be at least 1024");
  }
  if (s.writers < 1) {
    errors.push_back("status.writers: must be at least 1");
  }
  if (s.writer.field_manager.empty() || s.writer.field_manager.size() > 128) {
    errors.push_back("status.fieldManager: must be 1 to 128 characters");
  }
  if (!errors.empty()) {
    return absl::InvalidArgumentError(absl::StrJoin(errors, "; "));
  }
  return absl::OkStatus();
}

absl::StatusOr<StatusSinkSettings> LoadSettings(int argc, const char* const* argv,
                                                const EnvLookup& env) {
  CLI::App cli{"mmi status-sink: writes managed clusters' Argo CD status onto the hub"};
  std::string config_path, kubeconfig, context, dsn, admin, log_level, lease_ns, identity;
  std::optional<bool> leader_elect;
  cli.add_option("--config", config_path, "YAML config file");
  cli.add_option("--kubeconfig", kubeconfig, "hub kubeconfig (default: KUBECONFIG / in-cluster)");
  cli.add_option("--context", context, "kubeconfig context");
  cli.add_option("--store-dsn", dsn, "PostgreSQL DSN (prefer env MMI_STORE_DSN)");
  cli.add_option("--admin-listen", admin, "host:port of /metrics, /healthz, /readyz");
  cli.add_option("--log-level", log_level, "debug|info|warn|error");
  cli.add_option("--leader-elect", leader_elect, "use a Lease for leader election");
  cli.add_option("--lease-namespace", lease_ns, "namespace of the leader election Lease");
  cli.add_option("--identity", identity, "leader election identity");
  try {
    cli.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    return absl::CancelledError(cli.help());
  } catch (const CLI::ParseError& e) {
    return absl::InvalidArgumentError(absl::StrCat("command line: ", e.what()));
  }

  StatusSinkSettings s;
  if (!config_path.empty()) {
    auto text = config::ReadFile(config_path);
    if (!text.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--config ", config_path, ": ", text.status().message()));
    }
    auto parsed = ParseSettingsYaml(*text);
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(config_path, ": ", parsed.status().message()));
    }
    s = *std::move(parsed);
  }
  ApplyEnvironment(s, env);
  if (!kubeconfig.empty()) {
    s.kube.kubeconfig = kubeconfig;
  }
  if (!context.empty()) {
    s.kube.context = context;
  }
  if (!dsn.empty()) {
    s.store.dsn = dsn;
  }
  if (!admin.empty()) {
    s.admin_listen = admin;
  }
  if (!log_level.empty()) {
    s.log_level = log_level;
  }
  if (leader_elect) {
    s.leader.enabled = *leader_elect;
  }
  if (!lease_ns.empty()) {
    s.leader.lease_namespace = lease_ns;
  }
  if (!identity.empty()) {
    s.leader.identity = identity;
  }
  if (auto status = FinalizeSettings(s); !status.ok()) {
    return status;
  }
  return s;
}

std::string SettingsSummary(const StatusSinkSettings& s) {
  return absl::StrCat(
      "logLevel=", s.log_level, " admin=", s.admin_listen, " kube.kubeconfig=", s.kube.kubeconfig,
      " kube.qps=", s.kube.qps, " store.poolSize=", s.store.pool_size,
      " leaderElection.enabled=", s.leader.enabled,
      " leaderElection.lease=", s.leader.lease_namespace, "/", s.leader.lease_name,
      " identity=", s.leader.identity, " transport=", transport::RedactedSummary(s.transport),
      " status.maxInFlight=", s.sink.max_in_flight, " status.writers=", s.writers,
      " status.volatileInterval=", s.sink.coalescer.volatile_interval.count(), "ms");
}

}  // namespace mmi::status_sink
