// The Helm chart and examples/ against the real tools and a real hub (STYLE.md §10 gate 4):
//   * `helm lint --strict` with the defaults and with every examples/values-*.yaml;
//   * the config files the chart renders load with the services' own settings loaders
//     (dispatcher::ParseSettingsYaml / status_sink::ParseSettingsYaml + FinalizeSettings);
//   * the metric names used by the PrometheusRule and the Grafana dashboard are exported by code;
//   * `helm template` of every values file, and every other YAML file in examples/, pass
//     `kubectl apply --dry-run=server` against a real kube-apiserver with every CRD of
//     ../shared/crds (which has no Prometheus Operator CRDs: ServiceMonitor / PrometheusRule are
//     only rendered, never applied).
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "services/dispatcher/settings.h"
#include "services/status-sink/settings.h"
#include "tests/support/peer.h"

namespace mmi {
namespace {

namespace fs = std::filesystem;
using testing::CommandResult;
using testing::RunCommand;

constexpr char kReleaseNamespace[] = "open-cluster-management";

std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string SourceDir() { return MMI_SOURCE_DIR; }
std::string ChartDir() { return SourceDir() + "/charts/multicluster-maestro-integrations"; }
std::string ExamplesDir() { return SourceDir() + "/examples"; }

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The helm binary tests/peers/build/helm.sh built, located with tests/peers/lib.sh's variables.
std::string Helm() {
  static const std::string helm = [] {
    const CommandResult r = RunCommand(
        absl::StrCat("bash -c ",
                     Quote("source \"$0/tests/peers/lib.sh\" && "
                           "printf %s \"$MMI_PEERS_HOME/helm-$MMI_HELM_VERSION/bin/helm\""),
                     " ", Quote(SourceDir())));
    return r.exit_code == 0 ? r.output : std::string();
  }();
  return helm;
}

// examples/values-*.yaml, sorted.
std::vector<std::string> ValuesFiles() {
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(ExamplesDir())) {
    const std::string name = entry.path().filename().string();
    if (absl::StartsWith(name, "values-") && absl::EndsWith(name, ".yaml")) {
      files.push_back(entry.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Every other YAML file of examples/ (Kubernetes objects), sorted.
std::vector<std::string> ObjectFiles() {
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(ExamplesDir())) {
    const std::string name = entry.path().filename().string();
    if (!absl::StartsWith(name, "values-") &&
        (absl::EndsWith(name, ".yaml") || absl::EndsWith(name, ".yml"))) {
      files.push_back(entry.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

class ChartTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(Helm().empty()) << "cannot locate helm through tests/peers/lib.sh";
    ASSERT_TRUE(fs::exists(Helm())) << Helm() << " missing: run tests/peers/build/helm.sh";
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    work_dir_ = absl::StrCat(testing::PeerDataRoot(), "/chart_test/", info->name());
    fs::remove_all(work_dir_);
    fs::create_directories(work_dir_);
    ASSERT_EQ(ValuesFiles().size(), 3u) << "expected values-grpc/mqtt/kafka.yaml in examples/";
  }

  // `helm template` into a file; stderr (warnings) is returned in the result, never in the file.
  CommandResult Template(const std::string& out_file, const std::string& args) {
    return RunCommand(absl::StrCat("( ", Quote(Helm()), " template mmi ", Quote(ChartDir()),
                                   " --namespace ", kReleaseNamespace, " ", args, " > ",
                                   Quote(out_file), " )"));
  }

  std::string work_dir_;
};

// All documents of a multi-document YAML stream that are mappings.
std::vector<YAML::Node> Documents(const std::string& text) {
  std::vector<YAML::Node> docs;
  for (const YAML::Node& d : YAML::LoadAll(text)) {
    if (d && d.IsMap()) {
      docs.push_back(d);
    }
  }
  return docs;
}

std::optional<YAML::Node> FindKind(const std::vector<YAML::Node>& docs, const std::string& kind) {
  for (const YAML::Node& d : docs) {
    if (d["kind"] && d["kind"].as<std::string>() == kind) {
      return d;
    }
  }
  return std::nullopt;
}

// Names of the environment variables of every Deployment's first container.
std::set<std::string> DeploymentEnvNames(const std::vector<YAML::Node>& docs) {
  std::set<std::string> names;
  for (const YAML::Node& d : docs) {
    if (d["kind"].as<std::string>() != "Deployment") {
      continue;
    }
    for (const YAML::Node& e : d["spec"]["template"]["spec"]["containers"][0]["env"]) {
      names.insert(e["name"].as<std::string>());
    }
  }
  return names;
}

std::optional<std::string> FakeEnv(const char* name, const std::string& transport_secret_var) {
  const std::string n = name;
  if (n == "MMI_STORE_DSN") {
    return "postgresql://mmi@postgres.mmi:5432/mmi";
  }
  if (n == "KUBERNETES_SERVICE_HOST") {
    return "10.96.0.1";
  }
  if (n == "KUBERNETES_SERVICE_PORT") {
    return "443";
  }
  if (n == "POD_NAME") {
    return "mmi-0";
  }
  if (n == "POD_NAMESPACE") {
    return kReleaseNamespace;
  }
  if (!transport_secret_var.empty() && n == transport_secret_var) {
    return "secret-from-a-secret";
  }
  return std::nullopt;
}

TEST_F(ChartTest, HelmLintPassesWithDefaultsAndEveryExampleValuesFile) {
  CommandResult lint =
      RunCommand(absl::StrCat(Quote(Helm()), " lint --strict ", Quote(ChartDir()), " --namespace ",
                              kReleaseNamespace, " --set store.existingSecret=mmi-postgresql"));
  EXPECT_EQ(lint.exit_code, 0) << lint.output;
  EXPECT_TRUE(absl::StrContains(lint.output, "0 chart(s) failed")) << lint.output;
  for (const std::string& values : ValuesFiles()) {
    lint = RunCommand(absl::StrCat(Quote(Helm()), " lint --strict ", Quote(ChartDir()),
                                   " --namespace ", kReleaseNamespace, " -f ", Quote(values)));
    EXPECT_EQ(lint.exit_code, 0) << values << "\n" << lint.output;
    EXPECT_TRUE(absl::StrContains(lint.output, "0 chart(s) failed")) << lint.output;
  }
}

TEST_F(ChartTest, RefusesToRenderWithoutTheDsnSecretOrWithUnknownValues) {
  CommandResult r = Template(work_dir_ + "/no-dsn.yaml", "");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_TRUE(absl::StrContains(r.output, "store.existingSecret is required")) << r.output;

  r = Template(work_dir_ + "/typo.yaml",
               "--set store.existingSecret=pg --set dispatcher.replicaCount=3");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_TRUE(absl::StrContains(r.output, "replicaCount")) << r.output;

  r = Template(work_dir_ + "/mqtt-no-broker.yaml",
               "--set store.existingSecret=pg --set transport.type=mqtt");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_TRUE(absl::StrContains(r.output, "transport.mqtt.brokerHost is required")) << r.output;

  r = Template(
      work_dir_ + "/grpc-token-plaintext.yaml",
      "--set store.existingSecret=pg --set transport.credentials.serviceAccountToken=true");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_TRUE(absl::StrContains(r.output, "serviceAccountToken needs transport.tls.enabled"))
      << r.output;
}

// The chart's ConfigMap is what the binaries read with --config: load it with their loaders.
TEST_F(ChartTest, RenderedConfigFilesLoadWithTheServicesSettingsLoaders) {
  std::vector<std::pair<std::string, std::string>> cases = {
      {"defaults", "--set store.existingSecret=mmi-postgresql"}};
  for (const std::string& values : ValuesFiles()) {
    cases.emplace_back(fs::path(values).filename().string(), "-f " + Quote(values));
  }
  for (const auto& [name, args] : cases) {
    SCOPED_TRACE(name);
    const std::string out = work_dir_ + "/" + name + ".rendered.yaml";
    const CommandResult r = Template(out, args);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const auto docs = Documents(ReadFile(out));
    const auto config_map = FindKind(docs, "ConfigMap");
    ASSERT_TRUE(config_map.has_value()) << "no ConfigMap rendered";
    const YAML::Node data = (*config_map)["data"];
    ASSERT_TRUE(data["dispatcher.yaml"]) << "ConfigMap lacks dispatcher.yaml";
    ASSERT_TRUE(data["status-sink.yaml"]) << "ConfigMap lacks status-sink.yaml";

    const std::string dispatcher_yaml = data["dispatcher.yaml"].as<std::string>();
    const std::string sink_yaml = data["status-sink.yaml"].as<std::string>();
    const std::string type = YAML::Load(dispatcher_yaml)["transport"]["type"].as<std::string>();
    // The transport secret variable exists only when the Deployment maps it from a Secret.
    const std::string secret_var =
        type == "grpc" ? "MMI_TRANSPORT_TOKEN" : "MMI_TRANSPORT_PASSWORD";
    const std::set<std::string> env_names = DeploymentEnvNames(docs);
    const auto env = [&](const char* var) {
      return FakeEnv(var, env_names.contains(secret_var) ? secret_var : "");
    };

    auto dispatcher = dispatcher::ParseSettingsYaml(dispatcher_yaml);
    ASSERT_TRUE(dispatcher.ok()) << dispatcher.status() << "\n" << dispatcher_yaml;
    dispatcher::ApplyEnvironment(*dispatcher, env);
    const absl::Status dispatcher_final = dispatcher::FinalizeSettings(*dispatcher);
    ASSERT_TRUE(dispatcher_final.ok()) << dispatcher_final << "\n" << dispatcher_yaml;

    auto sink = status_sink::ParseSettingsYaml(sink_yaml);
    ASSERT_TRUE(sink.ok()) << sink.status() << "\n" << sink_yaml;
    status_sink::ApplyEnvironment(*sink, env);
    const absl::Status sink_final = status_sink::FinalizeSettings(*sink);
    ASSERT_TRUE(sink_final.ok()) << sink_final << "\n" << sink_yaml;

    // Both services speak the same transport with the same source id (status events are
    // addressed to the dispatcher's source), hold their Lease in the release namespace and
    // serve /metrics on the port the Deployments probe.
    EXPECT_EQ(transport::TransportName(dispatcher->transport), type);
    EXPECT_EQ(transport::TransportName(sink->transport), type);
    EXPECT_EQ(dispatcher->reconciler.payload.source_id, "app-work-client");
    EXPECT_EQ(sink->sink.source_id, "app-work-client");
    EXPECT_TRUE(dispatcher->leader.enabled);
    EXPECT_TRUE(sink->leader.enabled);
    EXPECT_EQ(dispatcher->leader.lease_namespace, kReleaseNamespace);
    EXPECT_EQ(sink->leader.lease_namespace, kReleaseNamespace);
    EXPECT_NE(dispatcher->leader.lease_name, sink->leader.lease_name);
    EXPECT_EQ(dispatcher->admin_listen, "0.0.0.0:8080");
    EXPECT_EQ(sink->admin_listen, "0.0.0.0:8080");
    EXPECT_EQ(dispatcher->store.dsn, "postgresql://mmi@postgres.mmi:5432/mmi");
    // Secrets reach the services only through the environment, never through the ConfigMap.
    EXPECT_FALSE(absl::StrContains(dispatcher_yaml, "secret-from-a-secret"));
    EXPECT_FALSE(absl::StrContains(dispatcher_yaml, "dsn:"));
    EXPECT_FALSE(absl::StrContains(sink_yaml, "password:"));
    EXPECT_FALSE(absl::StrContains(sink_yaml, "token:"));

    if (const auto* g = std::get_if<transport::GrpcSettings>(&dispatcher->transport)) {
      EXPECT_EQ(g->url, "maestro-grpc.maestro.svc.cluster.local:8090");
    }
    if (const auto* g = std::get_if<transport::GrpcSettings>(&dispatcher->transport);
        g != nullptr && name == "values-grpc.yaml") {
      // As Maestro ships TLS: TLS 1.3 verified with its CA, each pod's own service-account token
      // (Maestro's --grpc-authn-type=token), and the grant Maestro's SubjectAccessReview checks.
      EXPECT_TRUE(g->tls.enabled);
      EXPECT_EQ(g->tls.ca_file, "/etc/mmi/transport-tls/ca.crt");
      EXPECT_EQ(g->token_file, "/var/run/secrets/kubernetes.io/serviceaccount/token");
      bool granted = false;
      for (const YAML::Node& d : docs) {
        if (d["kind"].as<std::string>("") != "ClusterRole") {
          continue;
        }
        const YAML::Node urls = d["rules"][0]["nonResourceURLs"];
        if (urls && urls[0].as<std::string>("") == "/sources/app-work-client") {
          granted = d["rules"][0]["verbs"].size() == 2;
        }
      }
      EXPECT_TRUE(granted) << "no ClusterRole granting pub/sub on /sources/app-work-client";
    }
    if (const auto* m = std::get_if<transport::MqttSettings>(&dispatcher->transport)) {
      const auto* sm = std::get_if<transport::MqttSettings>(&sink->transport);
      ASSERT_NE(sm, nullptr);
      EXPECT_NE(m->shared_group, sm->shared_group) << "the services must not share a group";
      EXPECT_EQ(m->session_expiry, std::chrono::minutes(10)) << "the dispatcher's default session";
      EXPECT_EQ(sm->session_expiry, std::chrono::seconds(0));
      EXPECT_EQ(m->password, "secret-from-a-secret");
      EXPECT_EQ(m->tls.ca_file, "/etc/mmi/transport-tls/ca.crt");
    }
    if (const auto* k = std::get_if<transport::KafkaSettings>(&dispatcher->transport)) {
      const auto* sk = std::get_if<transport::KafkaSettings>(&sink->transport);
      ASSERT_NE(sk, nullptr);
      EXPECT_NE(k->group_id, sk->group_id) << "the services must not share a consumer group";
      EXPECT_EQ(k->sasl.password, "secret-from-a-secret");
    }

    // The Deployments run the binaries with that file, hardened, with both probes on the
    // admin port.
    int deployments = 0;
    for (const YAML::Node& d : docs) {
      if (d["kind"].as<std::string>() != "Deployment") {
        continue;
      }
      ++deployments;
      const YAML::Node pod = d["spec"]["template"]["spec"];
      const YAML::Node c = pod["containers"][0];
      EXPECT_EQ(c["args"][0].as<std::string>(), "--config=/etc/mmi/config.yaml");
      EXPECT_EQ(c["livenessProbe"]["httpGet"]["path"].as<std::string>(), "/healthz");
      EXPECT_EQ(c["readinessProbe"]["httpGet"]["path"].as<std::string>(), "/readyz");
      EXPECT_EQ(c["ports"][0]["containerPort"].as<int>(), 8080);
      EXPECT_TRUE(pod["securityContext"]["runAsNonRoot"].as<bool>());
      EXPECT_EQ(pod["securityContext"]["seccompProfile"]["type"].as<std::string>(),
                "RuntimeDefault");
      EXPECT_FALSE(c["securityContext"]["allowPrivilegeEscalation"].as<bool>());
      EXPECT_TRUE(c["securityContext"]["readOnlyRootFilesystem"].as<bool>());
      EXPECT_EQ(c["securityContext"]["capabilities"]["drop"][0].as<std::string>(), "ALL");
      EXPECT_TRUE(c["resources"]["requests"]) << "resources missing";
      bool dsn_from_secret = false;
      for (const YAML::Node& e : c["env"]) {
        if (e["name"].as<std::string>() == "MMI_STORE_DSN") {
          dsn_from_secret =
              e["valueFrom"]["secretKeyRef"]["name"].as<std::string>() == "mmi-postgresql";
        }
      }
      EXPECT_TRUE(dsn_from_secret) << "MMI_STORE_DSN must come from the existing Secret";
    }
    EXPECT_EQ(deployments, 2);
  }
}

// Every chart setting reaches the field the values.yaml comment names: a values file with a
// non-default value for each is rendered, loaded with the services' loaders (which reject any key
// they do not know, by its full path) and compared field by field, so a value that lands on the
// wrong field is caught too.
constexpr char kEverySetting[] = R"(
store: {existingSecret: pg}
transport:
  sourceId: src-a
  tls: {enabled: true, existingSecret: tls, caKey: ca.pem, certKey: c.pem, keyKey: k.pem}
  credentials: {existingSecret: creds, passwordKey: pw, tokenKey: tok}
  mqtt:
    brokerHost: broker.example:8883
    username: user-a
    keepAlive: 31s
    dialTimeout: 5s
    publishTimeout: 6s
    pubQoS: 0
    subQoS: 0
    dispatcherSessionExpiry: 17m
    topics:
      sourceEvents: sources/src-a/consumers/+/sourceevents
      agentEvents: sources/src-a/consumers/+/agentevents
      sourceBroadcast: sources/src-a/sourcebroadcast
      agentBroadcast: clusters/+/agentbroadcast
  grpc:
    url: maestro.example:9090
    dataType: io.example.type
    publishTimeout: 7s
    maxInFlight: 5
    keepAliveTime: 40s
    keepAliveTimeout: 8s
    serverHealthinessTimeout: 45s
    maxReceiveBytes: 8388609
  kafka:
    bootstrapServer: k1:9093,k2:9093
    sourceEventsTopic: se
    agentEventsTopic: ae
    keyByCluster: false
    sasl: {mechanism: PLAIN, username: ku}
    advancedConfig: {linger.ms: 5, compression.type: lz4}
    deliveryTimeout: 9s
    flushTimeout: 3s
dispatcher:
  logLevel: debug
  watchNamespace: apps
  adminPort: 9090
  shutdownTimeout: 20s
  kube: {qps: 25, burst: 60}
  store: {poolSize: 7, migrate: false}
  leaderElection: {leaseName: d-lease, leaseDuration: 30s, renewDeadline: 20s, retryPeriod: 4s}
  dispatch:
    defaultAppNamespace: apps-ns
    forceServerSideApply: true
    skipLocalCluster: false
    queueCapacity: 1234
    batchSize: 12
    maxInflightBatches: 3
    maxOutbox: 777
    unknownClusterRetry: 2m
    deleteResendAfter: 3m
    unknownClusterEventInterval: 20m
    workers: 5
    specResync: false
    compactInformerStorage: false
    firstListByPages: true
    firstList: streamed
  outbox: {maxInFlight: 99, retryInitial: 1s, retryMax: 2m, markLinger: 7ms}
  gitopsCluster:
    enabled: false
    resyncPeriod: 7m
    fieldManager: fm-d
    managedBy: mb-d
    orphanSecretPolicy: DeleteWhenUndecided
    refreshApplicationSets: false
    refreshMinInterval: 7s
statusSink:
  logLevel: warn
  adminPort: 9091
  shutdownTimeout: 21s
  kube: {qps: 33, burst: 44, requestTimeout: 15s}
  store: {poolSize: 3, migrate: false}
  leaderElection: {leaseName: s-lease, leaseDuration: 31s, renewDeadline: 21s, retryPeriod: 3s}
  status:
    intakeCapacity: 111
    maxInFlight: 22
    maxPending: 333
    volatileInterval: 1m
    ignoreResourceHealthMessages: true
    persistBatch: 44
    persistInterval: 100ms
    countsInterval: 10s
    resyncChunk: 555
    maxStatusBytes: 2048
    maxManifestPayloads: 77
    maxManifestStatuses: 88
    writers: 6
    fieldManager: fm-s
)";

struct LoadedSettings {
  dispatcher::DispatcherSettings dispatcher;
  status_sink::StatusSinkSettings sink;
};

TEST_F(ChartTest, EverySettingReachesTheServices) {
  using std::chrono::milliseconds;
  using std::chrono::seconds;
  const std::string values = work_dir_ + "/every-setting.yaml";
  std::ofstream(values) << kEverySetting;

  std::map<std::string, LoadedSettings> loaded;
  for (const char* type : {"mqtt", "grpc", "kafka"}) {
    SCOPED_TRACE(type);
    const std::string out = work_dir_ + "/" + type + ".yaml";
    // Per-service overrides are keys of one transport's section: set only the selected one's.
    std::string overrides;
    if (std::string(type) == "mqtt") {
      overrides =
          " --set dispatcher.transportOverrides.sharedGroup=grp-d"
          " --set statusSink.transportOverrides.sharedGroup=grp-s";
    } else if (std::string(type) == "kafka") {
      overrides =
          " --set dispatcher.transportOverrides.groupID=gid-d"
          " --set statusSink.transportOverrides.groupID=gid-s";
    }
    const CommandResult r = Template(
        out, absl::StrCat("-f ", Quote(values), " --set transport.type=", type, overrides));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const auto docs = Documents(ReadFile(out));
    const auto config_map = FindKind(docs, "ConfigMap");
    ASSERT_TRUE(config_map.has_value());
    const std::string secret_var =
        std::string(type) == "grpc" ? "MMI_TRANSPORT_TOKEN" : "MMI_TRANSPORT_PASSWORD";
    ASSERT_TRUE(DeploymentEnvNames(docs).contains(secret_var)) << secret_var;
    const auto env = [&](const char* var) { return FakeEnv(var, secret_var); };
    auto d =
        dispatcher::ParseSettingsYaml((*config_map)["data"]["dispatcher.yaml"].as<std::string>());
    ASSERT_TRUE(d.ok()) << d.status();
    dispatcher::ApplyEnvironment(*d, env);
    ASSERT_TRUE(dispatcher::FinalizeSettings(*d).ok()) << dispatcher::FinalizeSettings(*d);
    auto s =
        status_sink::ParseSettingsYaml((*config_map)["data"]["status-sink.yaml"].as<std::string>());
    ASSERT_TRUE(s.ok()) << s.status();
    status_sink::ApplyEnvironment(*s, env);
    ASSERT_TRUE(status_sink::FinalizeSettings(*s).ok()) << status_sink::FinalizeSettings(*s);
    loaded[type] = {*std::move(d), *std::move(s)};
  }
  ASSERT_EQ(loaded.size(), 3u);

  const dispatcher::DispatcherSettings& d = loaded["mqtt"].dispatcher;
  EXPECT_EQ(d.log_level, "debug");
  EXPECT_EQ(d.watch_namespace, "apps");
  EXPECT_EQ(d.admin_listen, "0.0.0.0:9090");
  EXPECT_EQ(d.shutdown_timeout, seconds(20));
  EXPECT_EQ(d.kube.qps, 25);
  EXPECT_EQ(d.kube.burst, 60);
  EXPECT_EQ(d.store.pool_size, 7);
  EXPECT_FALSE(d.store.migrate);
  EXPECT_TRUE(d.leader.enabled);
  EXPECT_EQ(d.leader.lease_namespace, kReleaseNamespace);
  EXPECT_EQ(d.leader.lease_name, "d-lease");
  EXPECT_EQ(d.leader.lease_duration, seconds(30));
  EXPECT_EQ(d.leader.renew_deadline, seconds(20));
  EXPECT_EQ(d.leader.retry_period, seconds(4));
  EXPECT_EQ(d.reconciler.payload.default_app_namespace, "apps-ns");
  EXPECT_TRUE(d.reconciler.payload.force_server_side_apply);
  EXPECT_FALSE(d.reconciler.skip_local_cluster);
  EXPECT_EQ(d.reconciler.queue_capacity, 1234u);
  EXPECT_EQ(d.reconciler.batch_size, 12u);
  EXPECT_EQ(d.reconciler.max_inflight_batches, 3);
  EXPECT_EQ(d.reconciler.max_outbox, 777u);
  EXPECT_EQ(d.reconciler.unknown_cluster_retry, seconds(120));
  EXPECT_EQ(d.reconciler.delete_resend_after, seconds(180));
  EXPECT_EQ(d.reconciler.unknown_cluster_event_interval, seconds(1200));
  EXPECT_EQ(d.workers, 5);
  EXPECT_FALSE(d.spec_resync);
  EXPECT_FALSE(d.compact_informer_storage);                   // the default is true
  EXPECT_TRUE(d.first_list_by_pages);                         // the default is false
  EXPECT_EQ(d.first_list, dispatcher::FirstList::kStreamed);  // the default is auto
  EXPECT_EQ(d.outbox.max_in_flight, 99u);
  EXPECT_EQ(d.outbox.retry.initial, seconds(1));
  EXPECT_EQ(d.outbox.retry.max, seconds(120));
  EXPECT_EQ(d.outbox.mark_linger, std::chrono::milliseconds(7));
  EXPECT_FALSE(d.gitops_cluster_enabled);
  EXPECT_EQ(d.gitops_cluster.resync_period, seconds(420));
  EXPECT_EQ(d.gitops_cluster.field_manager, "fm-d");
  EXPECT_EQ(d.gitops_cluster.managed_by, "mb-d");
  EXPECT_EQ(d.gitops_cluster.orphan_secret_policy,
            dispatcher::OrphanSecretPolicy::kDeleteWhenUndecided);
  EXPECT_FALSE(d.gitops_cluster.refresh_application_sets);
  EXPECT_EQ(d.gitops_cluster.appset_refresh.min_interval, seconds(7));
  EXPECT_EQ(d.gitops_cluster.appset_refresh.field_manager, "fm-d");

  const status_sink::StatusSinkSettings& s = loaded["mqtt"].sink;
  EXPECT_EQ(s.log_level, "warn");
  EXPECT_EQ(s.admin_listen, "0.0.0.0:9091");
  EXPECT_EQ(s.shutdown_timeout, seconds(21));
  EXPECT_EQ(s.kube.qps, 33);
  EXPECT_EQ(s.kube.burst, 44);
  EXPECT_EQ(s.kube.request_timeout, seconds(15));
  EXPECT_EQ(s.store.pool_size, 3);
  EXPECT_FALSE(s.store.migrate);
  EXPECT_EQ(s.leader.lease_namespace, kReleaseNamespace);
  EXPECT_EQ(s.leader.lease_name, "s-lease");
  EXPECT_EQ(s.leader.lease_duration, seconds(31));
  EXPECT_EQ(s.leader.renew_deadline, seconds(21));
  EXPECT_EQ(s.leader.retry_period, seconds(3));
  EXPECT_EQ(s.sink.intake_capacity, 111u);
  EXPECT_EQ(s.sink.max_in_flight, 22u);
  EXPECT_EQ(s.sink.coalescer.max_pending, 333u);
  EXPECT_EQ(s.sink.coalescer.volatile_interval, seconds(60));
  EXPECT_TRUE(s.sink.coalescer.ignore_resource_health_messages);
  EXPECT_EQ(s.sink.persist_batch, 44u);
  EXPECT_EQ(s.sink.persist_interval, milliseconds(100));
  EXPECT_EQ(s.sink.counts_interval, seconds(10));
  EXPECT_EQ(s.sink.resync_chunk, 555u);
  EXPECT_EQ(s.sink.patch.max_status_bytes, 2048u);
  EXPECT_EQ(s.sink.max_manifest_payloads, 77u);
  EXPECT_EQ(s.sink.max_manifest_statuses, 88u);
  EXPECT_EQ(s.writers, 6);
  EXPECT_EQ(s.writer.field_manager, "fm-s");

  for (const auto* t : {&loaded["mqtt"].dispatcher.transport, &loaded["mqtt"].sink.transport}) {
    const auto* m = std::get_if<transport::MqttSettings>(t);
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->broker_host, "broker.example:8883");
    EXPECT_EQ(m->source_id, "src-a");
    EXPECT_EQ(m->username, "user-a");
    EXPECT_EQ(m->keep_alive, seconds(31));
    EXPECT_EQ(m->dial_timeout, seconds(5));
    EXPECT_EQ(m->publish_timeout, seconds(6));
    EXPECT_EQ(m->pub_qos, 0);
    EXPECT_EQ(m->sub_qos, 0);
    EXPECT_EQ(m->topics.source_events, "sources/src-a/consumers/+/sourceevents");
    EXPECT_EQ(m->topics.agent_events, "sources/src-a/consumers/+/agentevents");
    EXPECT_EQ(m->topics.source_broadcast, "sources/src-a/sourcebroadcast");
    EXPECT_EQ(m->topics.agent_broadcast, "clusters/+/agentbroadcast");
    EXPECT_TRUE(m->tls.enabled);
    EXPECT_EQ(m->tls.ca_file, "/etc/mmi/transport-tls/ca.pem");
    EXPECT_EQ(m->tls.client_cert_file, "/etc/mmi/transport-tls/c.pem");
    EXPECT_EQ(m->tls.client_key_file, "/etc/mmi/transport-tls/k.pem");
    EXPECT_EQ(m->password, "secret-from-a-secret");
  }
  EXPECT_EQ(std::get<transport::MqttSettings>(loaded["mqtt"].dispatcher.transport).shared_group,
            "grp-d");
  EXPECT_EQ(std::get<transport::MqttSettings>(loaded["mqtt"].sink.transport).shared_group, "grp-s");
  EXPECT_EQ(std::get<transport::MqttSettings>(loaded["mqtt"].dispatcher.transport).session_expiry,
            std::chrono::minutes(17));
  EXPECT_EQ(std::get<transport::MqttSettings>(loaded["mqtt"].sink.transport).session_expiry,
            seconds(0))
      << "the status sink resyncs on every subscribe: Clean Start";

  for (const auto* t : {&loaded["grpc"].dispatcher.transport, &loaded["grpc"].sink.transport}) {
    const auto* g = std::get_if<transport::GrpcSettings>(t);
    ASSERT_NE(g, nullptr);
    EXPECT_EQ(g->url, "maestro.example:9090");
    EXPECT_EQ(g->source_id, "src-a");
    EXPECT_EQ(g->data_type, "io.example.type");
    EXPECT_EQ(g->publish_timeout, seconds(7));
    EXPECT_EQ(g->max_in_flight, 5u);
    EXPECT_EQ(g->keep_alive_time, seconds(40));
    EXPECT_EQ(g->keep_alive_timeout, seconds(8));
    EXPECT_EQ(g->heartbeat_timeout, seconds(45));
    EXPECT_EQ(g->max_receive_bytes, 8388609u);
    EXPECT_EQ(g->tls.ca_file, "/etc/mmi/transport-tls/ca.pem");
    EXPECT_EQ(g->bearer_token, "secret-from-a-secret");
  }

  for (const auto* t : {&loaded["kafka"].dispatcher.transport, &loaded["kafka"].sink.transport}) {
    const auto* k = std::get_if<transport::KafkaSettings>(t);
    ASSERT_NE(k, nullptr);
    EXPECT_EQ(k->bootstrap_servers, "k1:9093,k2:9093");
    EXPECT_EQ(k->source_id, "src-a");
    EXPECT_EQ(k->source_events_topic, "se");
    EXPECT_EQ(k->agent_events_topic, "ae");
    EXPECT_FALSE(k->key_by_cluster);
    EXPECT_EQ(k->sasl.mechanism, "PLAIN");
    EXPECT_EQ(k->sasl.username, "ku");
    EXPECT_EQ(k->advanced_config.at("linger.ms"), "5");
    EXPECT_EQ(k->advanced_config.at("compression.type"), "lz4");
    EXPECT_EQ(k->delivery_timeout, seconds(9));
    EXPECT_EQ(k->flush_timeout, seconds(3));
    EXPECT_EQ(k->tls.client_cert_file, "/etc/mmi/transport-tls/c.pem");
    EXPECT_EQ(k->sasl.password, "secret-from-a-secret");
  }
  EXPECT_EQ(std::get<transport::KafkaSettings>(loaded["kafka"].dispatcher.transport).group_id,
            "gid-d");
  EXPECT_EQ(std::get<transport::KafkaSettings>(loaded["kafka"].sink.transport).group_id, "gid-s");
}

// A misspelt key, or a key of another transport's section, in a rendered config file stops the
// service at start-up with the key's full path (the loaders used to ignore such keys silently).
TEST_F(ChartTest, ServicesRejectUnknownKeysInTheRenderedConfigFiles) {
  const std::string mqtt_values = ExamplesDir() + "/values-mqtt.yaml";
  const std::string out = work_dir_ + "/typo.yaml";
  const CommandResult r =
      Template(out, absl::StrCat("-f ", Quote(mqtt_values),
                                 " --set dispatcher.transportOverrides.brokerHots=b:1883"
                                 " --set statusSink.transportOverrides.groupID=gid-s"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto config_map = FindKind(Documents(ReadFile(out)), "ConfigMap");
  ASSERT_TRUE(config_map.has_value());
  const std::string dispatcher_yaml = (*config_map)["data"]["dispatcher.yaml"].as<std::string>();
  const std::string sink_yaml = (*config_map)["data"]["status-sink.yaml"].as<std::string>();

  auto d = dispatcher::ParseSettingsYaml(dispatcher_yaml);
  ASSERT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument) << dispatcher_yaml;
  EXPECT_TRUE(absl::StrContains(d.status().message(), "transport.mqtt.brokerHots: unknown key"))
      << d.status();
  auto s = status_sink::ParseSettingsYaml(sink_yaml);
  ASSERT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << sink_yaml;
  EXPECT_TRUE(absl::StrContains(s.status().message(), "transport.mqtt.groupID: unknown key"))
      << s.status();

  // Without the typos the same values load.
  const std::string clean = work_dir_ + "/clean.yaml";
  ASSERT_EQ(Template(clean, "-f " + Quote(mqtt_values)).exit_code, 0);
  const auto clean_map = FindKind(Documents(ReadFile(clean)), "ConfigMap");
  ASSERT_TRUE(clean_map.has_value());
  EXPECT_TRUE(
      dispatcher::ParseSettingsYaml((*clean_map)["data"]["dispatcher.yaml"].as<std::string>())
          .ok());
  EXPECT_TRUE(
      status_sink::ParseSettingsYaml((*clean_map)["data"]["status-sink.yaml"].as<std::string>())
          .ok());
}

// Metric names a PromQL expression or dashboard refers to, without histogram suffixes.
std::set<std::string> MetricNames(const std::string& text) {
  static const std::regex kMetric(R"(\b((mmi|rest_client)_[a-z0-9_]+))");
  std::set<std::string> names;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), kMetric);
       it != std::sregex_iterator(); ++it) {
    std::string name = (*it)[1];
    for (const char* suffix : {"_bucket", "_count", "_sum"}) {
      if (absl::EndsWith(name, suffix)) {
        name.resize(name.size() - std::string(suffix).size());
      }
    }
    names.insert(name);
  }
  return names;
}

// Every `"name"` string literal in services/ and libs/ sources (metric families are registered
// with .Name("...")).
std::string AllSources() {
  std::string all;
  for (const char* dir : {"/services", "/libs"}) {
    for (const auto& entry : fs::recursive_directory_iterator(SourceDir() + dir)) {
      const std::string path = entry.path().string();
      if (entry.is_regular_file() && absl::EndsWith(path, ".cc") &&
          !absl::EndsWith(path, "_test.cc")) {
        all += ReadFile(path);
      }
    }
  }
  return all;
}

TEST_F(ChartTest, AlertsAndDashboardUseOnlyMetricsTheCodeExports) {
  const std::string out = work_dir_ + "/monitoring.yaml";
  const CommandResult r = Template(out,
                                   "--set store.existingSecret=pg "
                                   "--set metrics.serviceMonitor.enabled=true "
                                   "--set metrics.prometheusRule.enabled=true");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto docs = Documents(ReadFile(out));
  const auto monitor = FindKind(docs, "ServiceMonitor");
  ASSERT_TRUE(monitor.has_value());
  EXPECT_EQ((*monitor)["spec"]["endpoints"][0]["port"].as<std::string>(), "metrics");
  const auto rule = FindKind(docs, "PrometheusRule");
  ASSERT_TRUE(rule.has_value());

  std::set<std::string> alerts;
  std::string exprs;
  for (const YAML::Node& group : (*rule)["spec"]["groups"]) {
    for (const YAML::Node& alert : group["rules"]) {
      alerts.insert(alert["alert"].as<std::string>());
      exprs += alert["expr"].as<std::string>() + "\n";
    }
  }
  for (const char* expected : {"MmiStatusLagHigh", "MmiPublishErrors", "MmiStatusHubWriteErrors",
                               "MmiDispatcherHubWriteErrors", "MmiTransportDisconnected"}) {
    EXPECT_TRUE(alerts.contains(expected)) << "missing alert " << expected;
  }

  // Defaults render neither (the hub has no Prometheus Operator CRDs).
  const CommandResult plain = Template(work_dir_ + "/plain.yaml", "--set store.existingSecret=pg");
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  const auto plain_docs = Documents(ReadFile(work_dir_ + "/plain.yaml"));
  EXPECT_FALSE(FindKind(plain_docs, "ServiceMonitor").has_value());
  EXPECT_FALSE(FindKind(plain_docs, "PrometheusRule").has_value());

  const std::string dashboard_text = ReadFile(ExamplesDir() + "/grafana-dashboard.json");
  const nlohmann::json dashboard = nlohmann::json::parse(dashboard_text, nullptr, false);
  ASSERT_FALSE(dashboard.is_discarded()) << "grafana-dashboard.json is not valid JSON";
  ASSERT_TRUE(dashboard.contains("panels"));
  std::string dashboard_exprs;
  for (const auto& panel : dashboard["panels"]) {
    for (const auto& target : panel.value("targets", nlohmann::json::array())) {
      dashboard_exprs += target.value("expr", "") + "\n";
    }
  }

  const std::string sources = AllSources();
  const auto alert_metrics = MetricNames(exprs);
  const auto dashboard_metrics = MetricNames(dashboard_exprs);
  EXPECT_GE(alert_metrics.size(), 5u);
  EXPECT_GE(dashboard_metrics.size(), 25u);
  for (const auto* names : {&alert_metrics, &dashboard_metrics}) {
    for (const std::string& name : *names) {
      EXPECT_TRUE(absl::StrContains(sources, absl::StrCat("\"", name, "\"")))
          << name << " is not exported by any services/ or libs/ source";
    }
  }
}

// The image the chart runs: built on Debian 12 with the toolchain and C++ library packages of
// scripts/bootstrap (so the image cannot drift from what CI builds with), preset release, as a
// non-root user.
TEST_F(ChartTest, DockerfileBuildsFromTheBootstrapPackages) {
  const std::string dockerfile = ReadFile(SourceDir() + "/Dockerfile");
  ASSERT_FALSE(dockerfile.empty()) << "Dockerfile missing at the repository root";
  const std::string bootstrap = ReadFile(SourceDir() + "/scripts/bootstrap");
  // The lines after "# toolchain" and "# C++ libraries" up to the next comment.
  std::vector<std::string> packages;
  bool in_group = false;
  std::istringstream lines(bootstrap);
  for (std::string line; std::getline(lines, line);) {
    const std::string trimmed(absl::StripAsciiWhitespace(line));
    if (absl::StartsWith(trimmed, "#")) {
      in_group = trimmed == "# toolchain" || trimmed == "# C++ libraries";
      continue;
    }
    if (trimmed == ")") {
      break;
    }
    if (in_group) {
      for (absl::string_view p : absl::StrSplit(trimmed, ' ', absl::SkipEmpty())) {
        packages.emplace_back(p);
      }
    }
  }
  ASSERT_GE(packages.size(), 20u) << "cannot read DEBIAN_PACKAGES from scripts/bootstrap";
  for (const std::string& p : packages) {
    EXPECT_TRUE(absl::StrContains(dockerfile, " " + p + " ") ||
                absl::StrContains(dockerfile, " " + p + "\n") ||
                absl::StrContains(dockerfile, " " + p + " \\"))
        << "Dockerfile does not install " << p << " (scripts/bootstrap does)";
  }
  EXPECT_TRUE(absl::StrContains(dockerfile, "debian:12")) << "not Debian 12 (bookworm)";
  EXPECT_TRUE(absl::StrContains(dockerfile, "cmake --preset release"));
  EXPECT_TRUE(absl::StrContains(dockerfile, "AS build")) << "not a multi-stage build";
  EXPECT_TRUE(absl::StrContains(dockerfile, "USER 65532:65532"));
  // The chart runs the binaries under the names the image installs, as the image's user.
  EXPECT_TRUE(absl::StrContains(dockerfile, "/out/mmi-dispatcher"));
  EXPECT_TRUE(absl::StrContains(dockerfile, "/out/mmi-status-sink"));
  const std::string values = ReadFile(ChartDir() + "/values.yaml");
  EXPECT_TRUE(absl::StrContains(values, "runAsUser: 65532"));
}

class ChartOnHubTest : public ChartTest {
 protected:
  CommandResult Kubectl(const testing::PeerProcess& hub, const std::string& args) {
    return RunCommand(absl::StrCat(Quote(hub.Get("KUBECTL")), " --kubeconfig ",
                                   Quote(hub.Get("KUBECONFIG")), " ", args));
  }
};

TEST_F(ChartOnHubTest, RenderedChartAndExamplesPassServerSideDryRunOnARealHub) {
  MMI_START_PEER(hub, "kube", {"ROLE=hub"});

  // Namespaces the release and the examples live in are created for real.
  for (const char* ns : {"openshift-gitops", "mmi-apps"}) {
    const CommandResult created = Kubectl(*hub, absl::StrCat("create namespace ", ns));
    ASSERT_EQ(created.exit_code, 0) << created.output;
  }
  const CommandResult release_ns = Kubectl(*hub, absl::StrCat("get namespace ", kReleaseNamespace));
  ASSERT_EQ(release_ns.exit_code, 0) << release_ns.output;

  std::vector<std::pair<std::string, std::string>> renders;
  for (const std::string& values : ValuesFiles()) {
    renders.emplace_back(fs::path(values).stem().string(), "-f " + Quote(values));
  }
  // The namespaced-Application RBAC variant and a non-leader-elected single replica.
  renders.emplace_back("watch-namespace",
                       "--set store.existingSecret=pg --set dispatcher.watchNamespace=mmi-apps "
                       "--set statusSink.leaderElection.enabled=false --set statusSink.replicas=1 "
                       "--set dispatcher.gitopsCluster.enabled=false");

  for (const auto& [name, args] : renders) {
    SCOPED_TRACE(name);
    const std::string out = work_dir_ + "/" + name + ".yaml";
    const CommandResult rendered = Template(out, args);
    ASSERT_EQ(rendered.exit_code, 0) << rendered.output;
    // No -n: every namespaced object the chart renders names its namespace.
    const CommandResult applied = Kubectl(*hub, "apply --dry-run=server -f " + Quote(out));
    ASSERT_EQ(applied.exit_code, 0) << applied.output;
    for (const char* object :
         {"deployment.apps/mmi-multicluster-maestro-integrations-dispatcher",
          "deployment.apps/mmi-multicluster-maestro-integrations-status-sink",
          "configmap/mmi-multicluster-maestro-integrations-config",
          "serviceaccount/mmi-multicluster-maestro-integrations-dispatcher",
          "clusterrole.rbac.authorization.k8s.io/mmi-multicluster-maestro-integrations-dispatcher",
          "service/mmi-multicluster-maestro-integrations-status-sink-metrics"}) {
      EXPECT_TRUE(
          absl::StrContains(applied.output, absl::StrCat(object, " created (server dry run)")))
          << object << " not applied:\n"
          << applied.output;
    }
  }

  // Every Kubernetes object of examples/ validates against the CRDs (strict field validation).
  const auto objects = ObjectFiles();
  ASSERT_GE(objects.size(), 2u);
  int applied_objects = 0;
  for (const std::string& file : objects) {
    SCOPED_TRACE(file);
    const CommandResult applied = Kubectl(*hub, "apply --dry-run=server -f " + Quote(file));
    ASSERT_EQ(applied.exit_code, 0) << applied.output;
    for (size_t pos = 0; (pos = applied.output.find("(server dry run)", pos)) != std::string::npos;
         ++pos) {
      ++applied_objects;
    }
  }
  EXPECT_EQ(applied_objects, 5) << "GitOpsCluster, Placement, ManagedClusterSetBinding, "
                                   "ApplicationSet, the RollingSync ApplicationSet";

  // The dry run really validates: an unknown field in an example object is refused.
  const std::string broken = work_dir_ + "/broken-appset.yaml";
  {
    std::string text = ReadFile(ExamplesDir() + "/applicationset.yaml");
    const std::string anchor = "  generators:";
    const size_t at = text.find(anchor);
    ASSERT_NE(at, std::string::npos);
    text.insert(at, "  notAField: true\n");
    std::ofstream(broken) << text;
  }
  const CommandResult refused = Kubectl(*hub, "apply --dry-run=server -f " + Quote(broken));
  EXPECT_NE(refused.exit_code, 0) << refused.output;
  EXPECT_TRUE(absl::StrContains(refused.output, "notAField")) << refused.output;
}

// The chart's RBAC, applied for real to the hub, allows what the services' code does (read from
// services/dispatcher/*.cc, services/status-sink/*.cc, libs/kube/leader_elector.cc) and not more.
TEST_F(ChartOnHubTest, ServiceAccountsMayDoExactlyWhatTheCodeDoes) {
  MMI_START_PEER(hub, "kube", {"ROLE=hub"});
  const CommandResult created = Kubectl(*hub, "create namespace openshift-gitops");
  ASSERT_EQ(created.exit_code, 0) << created.output;
  const std::string out = work_dir_ + "/rbac.yaml";
  const CommandResult rendered = Template(out, "--set store.existingSecret=mmi-postgresql");
  ASSERT_EQ(rendered.exit_code, 0) << rendered.output;
  const CommandResult applied = Kubectl(*hub, "apply -f " + Quote(out));
  ASSERT_EQ(applied.exit_code, 0) << applied.output;

  const std::string ns = kReleaseNamespace;
  const std::string dispatcher = absl::StrCat("system:serviceaccount:", ns,
                                              ":mmi-multicluster-maestro-integrations-dispatcher");
  const std::string sink = absl::StrCat("system:serviceaccount:", ns,
                                        ":mmi-multicluster-maestro-integrations-status-sink");
  struct Check {
    const std::string* who;
    std::string args;  // kubectl auth can-i <args>
    bool allowed;
  };
  const std::vector<Check> checks = {
      // dispatcher: Applications (informer, operation strip, finalizer release) and Events.
      {&dispatcher, "list applications.argoproj.io -A", true},
      {&dispatcher, "watch applications.argoproj.io -A", true},
      {&dispatcher, "get applications.argoproj.io -n openshift-gitops", true},
      {&dispatcher, "patch applications.argoproj.io -n openshift-gitops", true},
      {&dispatcher, "update applications.argoproj.io -n openshift-gitops", false},
      {&dispatcher, "delete applications.argoproj.io -n openshift-gitops", false},
      {&dispatcher, "create applications.argoproj.io -n openshift-gitops", false},
      {&dispatcher, "create events -n openshift-gitops", true},
      // ManagedClusters and the GitOpsCluster controller.
      {&dispatcher, "list managedclusters.cluster.open-cluster-management.io", true},
      {&dispatcher, "watch managedclusters.cluster.open-cluster-management.io", true},
      {&dispatcher, "get managedclusters.cluster.open-cluster-management.io", true},
      {&dispatcher, "delete managedclusters.cluster.open-cluster-management.io", false},
      {&dispatcher, "watch gitopsclusters.apps.open-cluster-management.io -A", true},
      {&dispatcher,
       "patch gitopsclusters.apps.open-cluster-management.io --subresource=status -n "
       "openshift-gitops",
       true},
      {&dispatcher, "update gitopsclusters.apps.open-cluster-management.io -n openshift-gitops",
       false},
      {&dispatcher, "get placements.cluster.open-cluster-management.io -n openshift-gitops", true},
      {&dispatcher, "watch placementdecisions.cluster.open-cluster-management.io -A", true},
      {&dispatcher, "get namespaces", true},
      {&dispatcher, "list services -n openshift-gitops", true},
      {&dispatcher, "list serviceaccounts -n openshift-gitops", true},
      {&dispatcher, "watch secrets -A", true},
      {&dispatcher, "create secrets -n openshift-gitops", true},
      {&dispatcher, "update secrets -n openshift-gitops", true},
      {&dispatcher, "delete secrets -n openshift-gitops", true},
      {&dispatcher, "patch secrets -n openshift-gitops", false},
      {&dispatcher, "create configmaps -n openshift-gitops", true},
      {&dispatcher, "update configmaps -n openshift-gitops", false},
      {&dispatcher, "create roles.rbac.authorization.k8s.io -n openshift-gitops", true},
      {&dispatcher, "create rolebindings.rbac.authorization.k8s.io -n openshift-gitops", true},
      {&dispatcher, "delete roles.rbac.authorization.k8s.io -n openshift-gitops", false},
      // ApplicationSets reading a Placement's decisions are asked to refresh (appset_refresh.cc).
      {&dispatcher, "watch applicationsets.argoproj.io -A", true},
      {&dispatcher, "patch applicationsets.argoproj.io -n openshift-gitops", true},
      {&dispatcher, "update applicationsets.argoproj.io -n openshift-gitops", false},
      {&dispatcher, "delete applicationsets.argoproj.io -n openshift-gitops", false},
      // The Lease, only its own and only in the release namespace.
      {&dispatcher, "create leases.coordination.k8s.io -n " + ns, true},
      {&dispatcher, "get leases.coordination.k8s.io/mmi-dispatcher -n " + ns, true},
      {&dispatcher, "update leases.coordination.k8s.io/mmi-dispatcher -n " + ns, true},
      {&dispatcher, "update leases.coordination.k8s.io/mmi-status-sink -n " + ns, false},
      {&dispatcher, "create leases.coordination.k8s.io -n kube-system", false},
      // status sink: merge-patches Application status, holds its Lease; nothing else.
      {&sink, "patch applications.argoproj.io -n openshift-gitops", true},
      {&sink, "get applications.argoproj.io -n openshift-gitops", false},
      {&sink, "list applications.argoproj.io -A", false},
      // ... and watches ApplicationSets for their strategy (progressingBeforeHealthy RollingSync).
      {&sink, "list applicationsets.argoproj.io -A", true},
      {&sink, "watch applicationsets.argoproj.io -A", true},
      {&sink, "patch applicationsets.argoproj.io -n openshift-gitops", false},
      {&sink, "get secrets -n openshift-gitops", false},
      {&sink, "create leases.coordination.k8s.io -n " + ns, true},
      {&sink, "get leases.coordination.k8s.io/mmi-status-sink -n " + ns, true},
      {&sink, "update leases.coordination.k8s.io/mmi-status-sink -n " + ns, true},
      {&sink, "update leases.coordination.k8s.io/mmi-dispatcher -n " + ns, false},
  };
  for (const Check& c : checks) {
    const CommandResult r = Kubectl(*hub, absl::StrCat("auth can-i ", c.args, " --as=", *c.who));
    // can-i exits 0 for yes and 1 for no; anything else is an error.
    ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << c.args << ": " << r.output;
    EXPECT_EQ(r.exit_code == 0, c.allowed)
        << *c.who << (c.allowed ? " may not " : " may ") << c.args << ": " << r.output;
  }

  // RBAC escalation prevention: the dispatcher may create the ApplicationSet controller's
  // placement Role and RoleBinding (gitops_cluster.cc) only if it holds what they grant.
  const std::string appset_rbac = work_dir_ + "/appset-rbac.yaml";
  std::ofstream(appset_rbac) << R"(apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: openshift-gitops-applicationset-controller-placement
  namespace: openshift-gitops
rules:
  - apiGroups: ["apps.open-cluster-management.io"]
    resources: ["placementrules"]
    verbs: ["list"]
  - apiGroups: ["cluster.open-cluster-management.io"]
    resources: ["placementdecisions"]
    verbs: ["list"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: openshift-gitops-applicationset-controller-placement
  namespace: openshift-gitops
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: openshift-gitops-applicationset-controller-placement
subjects:
  - kind: ServiceAccount
    name: openshift-gitops-applicationset-controller
    namespace: openshift-gitops
)";
  const CommandResult as_dispatcher =
      Kubectl(*hub, absl::StrCat("create -f ", Quote(appset_rbac), " --as=", dispatcher));
  EXPECT_EQ(as_dispatcher.exit_code, 0) << as_dispatcher.output;
  const CommandResult as_sink = Kubectl(
      *hub, absl::StrCat("create --dry-run=server -f ", Quote(appset_rbac), " --as=", sink));
  EXPECT_NE(as_sink.exit_code, 0) << as_sink.output;
  EXPECT_TRUE(absl::StrContains(as_sink.output, "forbidden")) << as_sink.output;
}

}  // namespace
}  // namespace mmi
