#include "services/dispatcher/settings.h"

#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <CLI/CLI.hpp>
#include <exception>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "libs/cloudevents/resource_id.h"
#include "libs/common/config.h"
#include "libs/common/log.h"
#include "libs/kube/leader_elector.h"

namespace mmi::dispatcher {
namespace {

// Reads typed values from YAML, collecting every error with its full path.
class Reader {
 public:
  std::vector<std::string> errors;

  static YAML::Node Child(const YAML::Node& node, const char* key) {
    if (!node || !node.IsMap()) {
      return YAML::Node();
    }
    return node[key];
  }

  bool Present(const YAML::Node& node, const char* key) {
    const YAML::Node v = Child(node, key);
    return v && !v.IsNull();
  }

  template <typename T>
  void Scalar(const YAML::Node& node, const char* key, const std::string& path, T& out) {
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
      errors.push_back(absl::StrCat(path, ".", key, ": expected a ", TypeName<T>(), ", got '",
                                    v.IsScalar() ? v.Scalar() : "<non-scalar>", "'"));
    }
  }

  template <typename Duration>
  void Dur(const YAML::Node& node, const char* key, const std::string& path, Duration& out) {
    std::string text;
    Scalar(node, key, path, text);
    if (text.empty()) {
      return;
    }
    auto parsed = config::ParseDuration(text);
    if (!parsed.ok()) {
      errors.push_back(absl::StrCat(path, ".", key, ": ", parsed.status().message()));
      return;
    }
    out = std::chrono::duration_cast<Duration>(*parsed);
  }

  void Tls(const YAML::Node& node, const std::string& path, transport::TlsSettings& tls) {
    const YAML::Node t = Child(node, "tls");
    const std::string p = path + ".tls";
    Scalar(t, "enabled", p, tls.enabled);
    Scalar(t, "caFile", p, tls.ca_file);
    Scalar(t, "clientCertFile", p, tls.client_cert_file);
    Scalar(t, "clientKeyFile", p, tls.client_key_file);
    if (!tls.ca_file.empty() || !tls.client_cert_file.empty()) {
      if (!Present(t, "enabled")) {
        tls.enabled = true;
      }
    }
  }

 private:
  template <typename T>
  static const char* TypeName() {
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

void ReadMqtt(Reader& r, const YAML::Node& n, transport::MqttSettings& m) {
  const std::string p = "transport.mqtt";
  r.Scalar(n, "brokerHost", p, m.broker_host);
  r.Scalar(n, "sourceId", p, m.source_id);
  r.Scalar(n, "clientId", p, m.client_id);
  r.Scalar(n, "sharedGroup", p, m.shared_group);
  r.Scalar(n, "username", p, m.username);
  r.Scalar(n, "password", p, m.password);
  r.Tls(n, p, m.tls);
  r.Dur(n, "keepAlive", p, m.keep_alive);
  r.Dur(n, "dialTimeout", p, m.dial_timeout);
  r.Dur(n, "publishTimeout", p, m.publish_timeout);
  r.Scalar(n, "pubQoS", p, m.pub_qos);
  r.Scalar(n, "subQoS", p, m.sub_qos);
  const YAML::Node t = Reader::Child(n, "topics");
  const std::string tp = p + ".topics";
  r.Scalar(t, "sourceEvents", tp, m.topics.source_events);
  r.Scalar(t, "agentEvents", tp, m.topics.agent_events);
  r.Scalar(t, "sourceBroadcast", tp, m.topics.source_broadcast);
  r.Scalar(t, "agentBroadcast", tp, m.topics.agent_broadcast);
}

void ReadGrpc(Reader& r, const YAML::Node& n, transport::GrpcSettings& g) {
  const std::string p = "transport.grpc";
  r.Scalar(n, "url", p, g.url);
  r.Scalar(n, "sourceId", p, g.source_id);
  r.Scalar(n, "dataType", p, g.data_type);
  r.Tls(n, p, g.tls);
  r.Scalar(n, "token", p, g.bearer_token);
  r.Dur(n, "publishTimeout", p, g.publish_timeout);
  r.Dur(n, "keepAliveTime", p, g.keep_alive_time);
  r.Dur(n, "keepAliveTimeout", p, g.keep_alive_timeout);
  r.Dur(n, "serverHealthinessTimeout", p, g.heartbeat_timeout);
  r.Scalar(n, "maxReceiveBytes", p, g.max_receive_bytes);
}

void ReadKafka(Reader& r, const YAML::Node& n, transport::KafkaSettings& k) {
  const std::string p = "transport.kafka";
  r.Scalar(n, "bootstrapServer", p, k.bootstrap_servers);
  r.Scalar(n, "sourceId", p, k.source_id);
  r.Scalar(n, "groupID", p, k.group_id);
  r.Scalar(n, "sourceEventsTopic", p, k.source_events_topic);
  r.Scalar(n, "agentEventsTopic", p, k.agent_events_topic);
  r.Scalar(n, "keyByCluster", p, k.key_by_cluster);
  r.Tls(n, p, k.tls);
  const YAML::Node s = Reader::Child(n, "sasl");
  r.Scalar(s, "mechanism", p + ".sasl", k.sasl.mechanism);
  r.Scalar(s, "username", p + ".sasl", k.sasl.username);
  r.Scalar(s, "password", p + ".sasl", k.sasl.password);
  const YAML::Node adv = Reader::Child(n, "advancedConfig");
  if (adv && adv.IsMap()) {
    for (const auto& kv : adv) {
      k.advanced_config[kv.first.as<std::string>()] = kv.second.as<std::string>();
    }
  }
  r.Dur(n, "deliveryTimeout", p, k.delivery_timeout);
  r.Dur(n, "flushTimeout", p, k.flush_timeout);
}

void ReadTransport(Reader& r, const YAML::Node& n, transport::TransportSettings& out) {
  std::string type = "mqtt";
  r.Scalar(n, "type", "transport", type);
  if (type == "mqtt") {
    transport::MqttSettings m;
    ReadMqtt(r, Reader::Child(n, "mqtt"), m);
    out = std::move(m);
  } else if (type == "grpc") {
    transport::GrpcSettings g;
    ReadGrpc(r, Reader::Child(n, "grpc"), g);
    out = std::move(g);
  } else if (type == "kafka") {
    transport::KafkaSettings k;
    ReadKafka(r, Reader::Child(n, "kafka"), k);
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
    return "mmi-dispatcher";
  }
  return buf;
}

}  // namespace

absl::StatusOr<DispatcherSettings> ParseSettingsYaml(std::string_view yaml) {
  DispatcherSettings s;
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
  try {
    r.Scalar(root, "logLevel", "", s.log_level);
    r.Scalar(root, "watchNamespace", "", s.watch_namespace);
    r.Dur(root, "shutdownTimeout", "", s.shutdown_timeout);
    r.Scalar(Reader::Child(root, "admin"), "listenAddress", "admin", s.admin_listen);

    const YAML::Node kube = Reader::Child(root, "kube");
    r.Scalar(kube, "kubeconfig", "kube", s.kube.kubeconfig);
    r.Scalar(kube, "context", "kube", s.kube.context);
    r.Scalar(kube, "qps", "kube", s.kube.qps);
    r.Scalar(kube, "burst", "kube", s.kube.burst);

    const YAML::Node store = Reader::Child(root, "store");
    r.Scalar(store, "dsn", "store", s.store.dsn);
    r.Scalar(store, "poolSize", "store", s.store.pool_size);
    r.Scalar(store, "migrate", "store", s.store.migrate);

    const YAML::Node le = Reader::Child(root, "leaderElection");
    r.Scalar(le, "enabled", "leaderElection", s.leader.enabled);
    r.Scalar(le, "namespace", "leaderElection", s.leader.lease_namespace);
    r.Scalar(le, "name", "leaderElection", s.leader.lease_name);
    r.Scalar(le, "identity", "leaderElection", s.leader.identity);
    r.Dur(le, "leaseDuration", "leaderElection", s.leader.lease_duration);
    r.Dur(le, "renewDeadline", "leaderElection", s.leader.renew_deadline);
    r.Dur(le, "retryPeriod", "leaderElection", s.leader.retry_period);

    ReadTransport(r, Reader::Child(root, "transport"), s.transport);

    const YAML::Node d = Reader::Child(root, "dispatch");
    const std::string dp = "dispatch";
    r.Scalar(d, "defaultAppNamespace", dp, s.reconciler.payload.default_app_namespace);
    r.Scalar(d, "forceServerSideApply", dp, s.reconciler.payload.force_server_side_apply);
    r.Scalar(d, "skipLocalCluster", dp, s.reconciler.skip_local_cluster);
    r.Scalar(d, "queueCapacity", dp, s.reconciler.queue_capacity);
    r.Scalar(d, "batchSize", dp, s.reconciler.batch_size);
    r.Scalar(d, "maxInflightBatches", dp, s.reconciler.max_inflight_batches);
    r.Dur(d, "unknownClusterRetry", dp, s.reconciler.unknown_cluster_retry);
    r.Dur(d, "unknownClusterEventInterval", dp, s.reconciler.unknown_cluster_event_interval);
    r.Scalar(d, "workers", dp, s.workers);
    r.Scalar(d, "specResync", dp, s.spec_resync);
    r.Scalar(d, "compactInformerStorage", dp, s.compact_informer_storage);

    const YAML::Node o = Reader::Child(root, "outbox");
    r.Scalar(o, "maxInFlight", "outbox", s.outbox.max_in_flight);
    r.Dur(o, "retryInitial", "outbox", s.outbox.retry.initial);
    r.Dur(o, "retryMax", "outbox", s.outbox.retry.max);

    const YAML::Node g = Reader::Child(root, "gitopsCluster");
    r.Scalar(g, "enabled", "gitopsCluster", s.gitops_cluster_enabled);
    r.Dur(g, "resyncPeriod", "gitopsCluster", s.gitops_cluster.resync_period);
    r.Scalar(g, "fieldManager", "gitopsCluster", s.gitops_cluster.field_manager);
    r.Scalar(g, "managedBy", "gitopsCluster", s.gitops_cluster.managed_by);
    std::string orphans;
    r.Scalar(g, "orphanSecretPolicy", "gitopsCluster", orphans);
    if (orphans == "DeleteWhenUndecided") {
      s.gitops_cluster.orphan_secret_policy = OrphanSecretPolicy::kDeleteWhenUndecided;
    } else if (orphans == "DeleteWhenClusterGone") {
      s.gitops_cluster.orphan_secret_policy = OrphanSecretPolicy::kDeleteWhenClusterGone;
    } else if (!orphans.empty()) {
      r.errors.push_back(
          absl::StrCat("gitopsCluster.orphanSecretPolicy: must be DeleteWhenClusterGone or "
                       "DeleteWhenUndecided, got '",
                       orphans, "'"));
    }
  } catch (const std::exception& e) {
    r.errors.push_back(absl::StrCat("config file: ", e.what()));
  }
  if (!r.errors.empty()) {
    return absl::InvalidArgumentError(absl::StrJoin(r.errors, "; "));
  }
  return s;
}

void ApplyEnvironment(DispatcherSettings& s, const EnvLookup& env) {
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
  if (auto v = env("POD_NAME"); v && !v->empty()) {
    s.reconciler.event_instance = *v;
    if (s.leader.identity.empty()) {
      s.leader.identity = *v;
    }
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

absl::Status FinalizeSettings(DispatcherSettings& s) {
  std::vector<std::string> errors;
  std::string& source_id = SourceIdOf(s.transport);
  if (source_id.empty()) {
    source_id = s.reconciler.payload.source_id;  // app-work-client, as the Go controller
  }
  s.reconciler.payload.source_id = source_id;
  s.reconciler.version_mode = std::holds_alternative<transport::GrpcSettings>(s.transport)
                                  ? VersionMode::kMaestro
                                  : VersionMode::kCounter;
  if (std::holds_alternative<transport::GrpcSettings>(s.transport)) {
    s.spec_resync = false;  // Maestro's source server never sends spec resync requests
  }
  // The dispatcher only wants spec resync requests: never take status events from the status
  // sink's share group / consumer group.
  if (auto* m = std::get_if<transport::MqttSettings>(&s.transport)) {
    if (m->shared_group == "statussubscribers") {
      m->shared_group = "mmi-dispatcher";
    }
  }
  if (auto* k = std::get_if<transport::KafkaSettings>(&s.transport)) {
    if (k->group_id.empty()) {
      k->group_id = source_id + "-dispatcher";
    }
  }
  if (s.reconciler.event_instance.empty()) {
    s.reconciler.event_instance = Hostname();
  }
  if (s.leader.identity.empty()) {
    s.leader.identity = Hostname();
  }
  if (s.leader.identity.find('_') == std::string::npos) {
    s.leader.identity += "_" + cloudevents::NewUuidV4().substr(0, 8);
  }
  if (s.leader.lease_namespace.empty()) {
    s.leader.lease_namespace = "default";
  }

  if (auto level = log::ParseLevel(s.log_level); !level.ok()) {
    errors.push_back(absl::StrCat("logLevel: ", level.status().message()));
  }
  if (s.store.dsn.empty()) {
    errors.push_back("store.dsn: required (or env MMI_STORE_DSN)");
  }
  if (s.store.pool_size < 1) {
    errors.push_back("store.poolSize: must be >= 1");
  }
  if (s.workers < 1) {
    errors.push_back("dispatch.workers: must be >= 1");
  }
  if (s.reconciler.batch_size < 1) {
    errors.push_back("dispatch.batchSize: must be >= 1");
  }
  if (s.reconciler.max_inflight_batches < 1) {
    errors.push_back("dispatch.maxInflightBatches: must be >= 1");
  }
  if (s.reconciler.queue_capacity < 1) {
    errors.push_back("dispatch.queueCapacity: must be >= 1");
  }
  if (s.outbox.max_in_flight < 1) {
    errors.push_back("outbox.maxInFlight: must be >= 1");
  }
  if (s.kube.kubeconfig.empty() &&
      (s.kube.in_cluster_host.empty() || s.kube.in_cluster_port.empty())) {
    errors.push_back(
        "kube.kubeconfig: required outside a cluster (or KUBECONFIG, or run in a pod)");
  }
  if (!IsDns1123Label(s.reconciler.payload.default_app_namespace)) {
    errors.push_back("dispatch.defaultAppNamespace: must be a DNS-1123 label");
  }
  if (absl::Status t = transport::ValidateTransportSettings(s.transport); !t.ok()) {
    errors.push_back(std::string(t.message()));
  }
  if (s.leader.enabled) {
    kube::LeaderElectionSettings le{s.leader.lease_namespace,
                                    s.leader.lease_name,
                                    s.leader.identity,
                                    s.leader.lease_duration,
                                    s.leader.renew_deadline,
                                    s.leader.retry_period,
                                    true};
    if (absl::Status v = kube::ValidateLeaderElectionSettings(le); !v.ok()) {
      errors.push_back(absl::StrCat("leaderElection: ", v.message()));
    }
  }
  if (!errors.empty()) {
    return absl::InvalidArgumentError(absl::StrJoin(errors, "; "));
  }
  return absl::OkStatus();
}

absl::StatusOr<DispatcherSettings> LoadSettings(int argc, const char* const* argv,
                                                const EnvLookup& env) {
  CLI::App cli{"mmi dispatcher: Argo CD pull model over Maestro/OCM CloudEvents"};
  std::string config_path;
  std::optional<std::string> kubeconfig, context, dsn, admin, log_level, lease_ns, identity,
      watch_ns;
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
  cli.add_option("--watch-namespace", watch_ns, "only Applications of this namespace");
  try {
    cli.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    return absl::CancelledError(cli.help());
  } catch (const CLI::ParseError& e) {
    return absl::InvalidArgumentError(absl::StrCat("flags: ", e.what()));
  }

  DispatcherSettings s;
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
  if (kubeconfig) {
    s.kube.kubeconfig = *kubeconfig;
  }
  if (context) {
    s.kube.context = *context;
  }
  if (dsn) {
    s.store.dsn = *dsn;
  }
  if (admin) {
    s.admin_listen = *admin;
  }
  if (log_level) {
    s.log_level = *log_level;
  }
  if (leader_elect) {
    s.leader.enabled = *leader_elect;
  }
  if (lease_ns) {
    s.leader.lease_namespace = *lease_ns;
  }
  if (identity) {
    s.leader.identity = *identity;
  }
  if (watch_ns) {
    s.watch_namespace = *watch_ns;
  }
  if (absl::Status st = FinalizeSettings(s); !st.ok()) {
    return st;
  }
  return s;
}

std::string SettingsSummary(const DispatcherSettings& s) {
  return absl::StrCat("watchNamespace=", s.watch_namespace.empty() ? "<all>" : s.watch_namespace,
                      " admin=", s.admin_listen,
                      " kube=", s.kube.kubeconfig.empty() ? "in-cluster" : s.kube.kubeconfig,
                      " store.poolSize=", s.store.pool_size,
                      " leaderElection=", s.leader.enabled ? "on" : "off",
                      " lease=", s.leader.lease_namespace, "/", s.leader.lease_name,
                      " identity=", s.leader.identity, " sourceId=", s.reconciler.payload.source_id,
                      " transport=", transport::RedactedSummary(s.transport),
                      " workers=", s.workers, " specResync=", s.spec_resync ? "on" : "off",
                      " skipLocalCluster=", s.reconciler.skip_local_cluster ? "on" : "off",
                      " gitopsCluster=", s.gitops_cluster_enabled ? "on" : "off");
}

}  // namespace mmi::dispatcher
