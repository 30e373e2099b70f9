#include "services/dispatcher/settings.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "absl/strings/str_cat.h"
#include "libs/cloudevents/resource_id.h"
#include "libs/common/config_yaml.h"
#include "libs/common/status_macros.h"
#include "libs/kube_object/object.h"
#include "libs/service/flags.h"
#include "libs/transport/settings_yaml.h"

namespace mmi::dispatcher {
namespace {

// dispatch.firstList's YAML values, read by ParseSettingsYaml and written by FirstListName.
constexpr std::pair<FirstList, const char*> kFirstListNames[] = {
    {FirstList::kAuto, "auto"}, {FirstList::kPaged, "paged"}, {FirstList::kStreamed, "streamed"}};

}  // namespace

absl::StatusOr<DispatcherSettings> ParseSettingsYaml(std::string_view yaml) {
  DispatcherSettings s;
  config::YamlReader reader(yaml);
  config::YamlSection root = reader.Root();
  root.Scalar("logLevel", s.log_level);
  root.Scalar("watchNamespace", s.watch_namespace);
  root.Duration("shutdownTimeout", s.shutdown_timeout);
  root.Section("admin").Scalar("listenAddress", s.admin_listen);
  service::ReadHubSettings(root.Section("kube"), s.kube);
  service::ReadStoreSettings(root.Section("store"), s.store);
  service::ReadLeaderSettings(root.Section("leaderElection"), s.leader);
  transport::ReadTransportSettings(root.Section("transport"), s.transport);

  config::YamlSection d = root.Section("dispatch");
  d.Scalar("defaultAppNamespace", s.reconciler.payload.default_app_namespace);
  d.Scalar("forceServerSideApply", s.reconciler.payload.force_server_side_apply);
  d.Scalar("skipLocalCluster", s.reconciler.skip_local_cluster);
  d.Scalar("queueCapacity", s.reconciler.queue_capacity);
  d.Scalar("batchSize", s.reconciler.batch_size);
  d.Scalar("maxInflightBatches", s.reconciler.max_inflight_batches);
  d.Scalar("maxOutbox", s.reconciler.max_outbox);
  d.Duration("unknownClusterRetry", s.reconciler.unknown_cluster_retry);
  d.Duration("deleteResendAfter", s.reconciler.delete_resend_after);
  d.Duration("unknownClusterEventInterval", s.reconciler.unknown_cluster_event_interval);
  config::YamlSection ack = d.Section("ackCheck");
  ack.Scalar("enabled", s.reconciler.ack_check.enabled);
  ack.Duration("interval", s.reconciler.ack_check.interval);
  ack.Duration("grace", s.reconciler.ack_check.grace);
  ack.Duration("timeout", s.reconciler.ack_check.timeout);
  ack.Scalar("maxPerCheck", s.reconciler.ack_check.max_per_check);
  ack.Scalar("maxWhileStalled", s.reconciler.ack_check.max_while_stalled);
  ack.Duration("maxBackoff", s.reconciler.ack_check.max_backoff);
  d.Scalar("workers", s.workers);
  d.Scalar("specResync", s.spec_resync);
  d.Scalar("compactInformerStorage", s.compact_informer_storage);
  d.Scalar("firstListByPages", s.first_list_by_pages);
  std::string first_list;
  d.Scalar("firstList", first_list);
  const auto named = std::find_if(std::begin(kFirstListNames), std::end(kFirstListNames),
                                  [&](const auto& entry) { return first_list == entry.second; });
  if (named != std::end(kFirstListNames)) {
    s.first_list = named->first;
  } else if (!first_list.empty()) {
    d.Error("firstList", absl::StrCat("must be auto, paged or streamed, got '", first_list, "'"));
  }

  config::YamlSection rest = root.Section("maestroRest");
  rest.Scalar("url", s.maestro_rest.base_url);
  rest.Duration("timeout", s.maestro_rest.timeout);
  config::YamlSection rest_tls = rest.Section("tls");
  rest_tls.Scalar("caFile", s.maestro_rest.tls.ca_file);
  rest_tls.Scalar("clientCertFile", s.maestro_rest.tls.client_cert_file);
  rest_tls.Scalar("clientKeyFile", s.maestro_rest.tls.client_key_file);
  rest.Scalar("maxRequestsPerSecond", s.reconciler.deletion_check.max_requests_per_second);
  rest.Scalar("maxInFlight", s.reconciler.deletion_check.max_in_flight);
  rest.Scalar("maxQueued", s.reconciler.deletion_check.max_queued);
  rest.Duration("errorPause", s.reconciler.deletion_check.error_pause);

  config::YamlSection o = root.Section("outbox");
  o.Scalar("maxInFlight", s.outbox.max_in_flight);
  o.Duration("retryInitial", s.outbox.retry.initial);
  o.Duration("retryMax", s.outbox.retry.max);
  o.Duration("markLinger", s.outbox.mark_linger);

  config::YamlSection g = root.Section("gitopsCluster");
  g.Scalar("enabled", s.gitops_cluster_enabled);
  g.Duration("resyncPeriod", s.gitops_cluster.resync_period);
  g.Scalar("fieldManager", s.gitops_cluster.field_manager);
  g.Scalar("managedBy", s.gitops_cluster.managed_by);
  g.Scalar("refreshApplicationSets", s.gitops_cluster.refresh_application_sets);
  g.Duration("refreshMinInterval", s.gitops_cluster.appset_refresh.min_interval);
  std::string orphans;
  g.Scalar("orphanSecretPolicy", orphans);
  if (orphans == "DeleteWhenUndecided") {
    s.gitops_cluster.orphan_secret_policy = OrphanSecretPolicy::kDeleteWhenUndecided;
  } else if (orphans == "DeleteWhenClusterGone") {
    s.gitops_cluster.orphan_secret_policy = OrphanSecretPolicy::kDeleteWhenClusterGone;
  } else if (!orphans.empty()) {
    g.Error(
        "orphanSecretPolicy",
        absl::StrCat("must be DeleteWhenClusterGone or DeleteWhenUndecided, got '", orphans, "'"));
  }
  config::YamlSection m = root.Section("manifests");
  config::YamlSection repo = m.Section("repoServer");
  repo.Scalar("address", s.manifests.repo_server.address);
  config::YamlSection repo_tls = repo.Section("tls");
  repo_tls.Scalar("enabled", s.manifests.repo_server.tls.enabled);
  repo_tls.Scalar("caFile", s.manifests.repo_server.tls.ca_file);
  repo_tls.Scalar("serverName", s.manifests.repo_server.tls.server_name);
  repo_tls.Scalar("insecureSkipVerify", s.manifests.repo_server.tls.insecure_skip_verify);
  m.Duration("resolveInterval", s.manifests.resolve_interval);
  m.Duration("renderTimeout", s.manifests.render_timeout);
  m.Scalar("argocdNamespace", s.manifests.argocd_namespace);
  m.Scalar("maxRendersInFlight", s.manifests.max_renders_in_flight);
  if (absl::Status st = reader.Finish(); !st.ok()) {
    return st;
  }
  return s;
}

void ApplyEnvironment(DispatcherSettings& s, const EnvLookup& env) {
  service::ApplyCommonEnvironment(env, s.kube, s.store, s.leader, s.transport);
  if (auto v = env("MMI_MAESTRO_REST_TOKEN"); v && !v->empty()) {
    s.maestro_rest.bearer_token = *v;
  }
  if (auto v = env("POD_NAME"); v && !v->empty()) {
    s.reconciler.event_instance = *v;
    if (s.leader.identity.empty()) {
      s.leader.identity = *v;
    }
  }
}

namespace {

// What follows from the rest of the settings: the source id, how versions are kept, group ids
// that do not steal the sink's status events, the event instance and the leader identity.
void DeriveDefaults(DispatcherSettings& s) {
  std::string& source_id = transport::SourceIdOf(s.transport);
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
    s.reconciler.event_instance = service::Hostname("mmi-dispatcher");
  }
  s.gitops_cluster.appset_refresh.field_manager = s.gitops_cluster.field_manager;
  s.gitops_cluster.appset_refresh.event_instance = s.reconciler.event_instance;
  if (s.leader.identity.empty()) {
    s.leader.identity = service::Hostname("mmi-dispatcher");
  }
  if (s.leader.identity.find('_') == std::string::npos) {
    s.leader.identity += "_" + cloudevents::NewUuidV4().substr(0, 8);
  }
  if (s.leader.lease_namespace.empty()) {
    s.leader.lease_namespace = "default";
  }
}

// maestroRest: the URL only with gRPC, and the deletion check's limits.
void ValidateMaestroRest(DispatcherSettings& s, std::vector<std::string>& errors) {
  if (!s.maestro_rest.base_url.empty()) {
    const std::string& url = s.maestro_rest.base_url;
    s.maestro_rest.tls.enabled = url.starts_with("https://");
    if (!std::holds_alternative<transport::GrpcSettings>(s.transport)) {
      errors.push_back("maestroRest.url: only used with transport.type grpc (set it to \"\")");
    } else if (!url.starts_with("http://") && !s.maestro_rest.tls.enabled) {
      errors.push_back("maestroRest.url: must start with http:// or https://, got '" + url + "'");
    }
    if (s.maestro_rest.timeout.count() <= 0) {
      errors.push_back("maestroRest.timeout: must be > 0");
    }
  }
  if (s.reconciler.deletion_check.max_requests_per_second <= 0) {
    errors.push_back("maestroRest.maxRequestsPerSecond: must be > 0");
  }
  if (s.reconciler.deletion_check.max_in_flight < 1) {
    errors.push_back("maestroRest.maxInFlight: must be >= 1");
  }
  if (s.reconciler.deletion_check.error_pause.count() <= 0) {
    errors.push_back("maestroRest.errorPause: must be > 0");
  }
}

// manifests: checked only when the mode is on (an address), so a hub without Argo CD's
// repo-server needs none of it.
void ValidateManifests(const ManifestDeliverySettings& m, std::vector<std::string>& errors) {
  if (!m.enabled()) {
    return;
  }
  if (m.repo_server.address.find(':') == std::string::npos ||
      m.repo_server.address.find("://") != std::string::npos) {
    errors.push_back("manifests.repoServer.address: must be host:port (no scheme), got '" +
                     m.repo_server.address + "'");
  }
  if (!m.repo_server.tls.enabled &&
      (!m.repo_server.tls.ca_file.empty() || m.repo_server.tls.insecure_skip_verify)) {
    errors.push_back(
        "manifests.repoServer.tls: caFile and insecureSkipVerify need tls.enabled true");
  }
  if (m.repo_server.tls.insecure_skip_verify && !m.repo_server.tls.ca_file.empty()) {
    errors.push_back(
        "manifests.repoServer.tls.insecureSkipVerify: verifies nothing, so caFile would be "
        "ignored; set one of them");
  }
  if (m.resolve_interval.count() <= 0) {
    errors.push_back("manifests.resolveInterval: must be > 0");
  }
  if (m.render_timeout.count() <= 0) {
    errors.push_back("manifests.renderTimeout: must be > 0");
  }
  if (!kube::IsDns1123Label(m.argocd_namespace)) {
    errors.push_back("manifests.argocdNamespace: must be a DNS-1123 label, got '" +
                     m.argocd_namespace + "'");
  }
  if (m.max_renders_in_flight < 1) {
    errors.push_back("manifests.maxRendersInFlight: must be >= 1");
  }
}

void ValidateAckCheck(const AckCheckSettings& a, std::vector<std::string>& errors) {
  if (a.interval < std::chrono::seconds(1)) {
    errors.push_back("dispatch.ackCheck.interval: must be >= 1s");
  }
  if (a.grace < std::chrono::seconds(1)) {
    errors.push_back("dispatch.ackCheck.grace: must be >= 1s");
  }
  if (a.timeout < a.grace) {
    errors.push_back("dispatch.ackCheck.timeout: must be >= dispatch.ackCheck.grace");
  }
  if (a.max_per_check < 1) {
    errors.push_back("dispatch.ackCheck.maxPerCheck: must be >= 1");
  }
  if (a.max_while_stalled < 0) {
    errors.push_back("dispatch.ackCheck.maxWhileStalled: must be >= 0");
  }
  if (a.max_backoff < a.grace) {
    errors.push_back("dispatch.ackCheck.maxBackoff: must be >= dispatch.ackCheck.grace");
  }
}

}  // namespace

absl::Status FinalizeSettings(DispatcherSettings& s) {
  DeriveDefaults(s);
  std::vector<std::string> errors;
  service::ValidateCommonSettings(s.log_level, s.kube, s.store, s.leader, errors);
  if (s.workers < 1) {
    errors.push_back("dispatch.workers: must be >= 1");
  }
  if (s.reconciler.delete_resend_after.count() <= 0) {
    errors.push_back("dispatch.deleteResendAfter: must be > 0");
  }
  ValidateAckCheck(s.reconciler.ack_check, errors);
  ValidateMaestroRest(s, errors);
  ValidateManifests(s.manifests, errors);
  if (s.gitops_cluster.appset_refresh.min_interval.count() < 0) {
    errors.push_back("gitopsCluster.refreshMinInterval: must be >= 0");
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
  if (s.outbox.mark_linger < std::chrono::milliseconds(0) ||
      s.outbox.mark_linger > std::chrono::seconds(10)) {
    errors.push_back("outbox.markLinger: must be between 0 and 10s");
  }
  if (!kube::IsDns1123Label(s.reconciler.payload.default_app_namespace)) {
    errors.push_back("dispatch.defaultAppNamespace: must be a DNS-1123 label");
  }
  if (absl::Status t = transport::ValidateTransportSettings(s.transport); !t.ok()) {
    errors.push_back(std::string(t.message()));
  }
  return service::InvalidIfAny(errors);
}

absl::StatusOr<DispatcherSettings> LoadSettings(int argc, const char* const* argv,
                                                const EnvLookup& env) {
  CLI::App cli{"mmi dispatcher: Argo CD pull model over Maestro/OCM CloudEvents"};
  service::CommonFlags flags;
  service::AddCommonFlags(cli, flags);
  std::optional<std::string> watch_ns;
  cli.add_option("--watch-namespace", watch_ns, "only Applications of this namespace");
  RETURN_IF_ERROR(service::ParseFlags(cli, argc, argv));

  ASSIGN_OR_RETURN(DispatcherSettings s, service::LoadConfigFile<DispatcherSettings>(
                                             flags.config_path, ParseSettingsYaml));
  ApplyEnvironment(s, env);
  service::ApplyCommonFlags(flags, s.kube, s.store, s.leader, s.admin_listen, s.log_level);
  if (watch_ns) {
    s.watch_namespace = *watch_ns;
  }
  RETURN_IF_ERROR(FinalizeSettings(s));
  return s;
}

const char* FirstListName(FirstList first_list) {
  for (const auto& [value, name] : kFirstListNames) {
    if (value == first_list) {
      return name;
    }
  }
  return "?";
}

FirstListChoice ChooseFirstList(const DispatcherSettings& settings,
                                const std::function<absl::StatusOr<bool>()>& has_resources) {
  switch (settings.first_list) {
    case FirstList::kPaged:
      return {.streamed = false, .why = "dispatch.firstList is paged"};
    case FirstList::kStreamed:
      return {.streamed = true,
              .why = settings.first_list_by_pages
                         ? "dispatch.firstList is streamed (dispatch.firstListByPages applies only "
                           "if the API server cannot stream)"
                         : "dispatch.firstList is streamed"};
    case FirstList::kAuto:
      break;
  }
  if (settings.first_list_by_pages) {
    return {.streamed = false, .why = "dispatch.firstListByPages hands out a paged list's pages"};
  }
  const absl::StatusOr<bool> dispatched = has_resources();
  if (!dispatched.ok()) {
    return {.streamed = false,
            .why = absl::StrCat("could not tell whether anything was dispatched before (",
                                dispatched.status().message(), ")"),
            .warn = true};
  }
  if (*dispatched) {
    return {.streamed = false, .why = "resources were dispatched before (a restart)"};
  }
  return {.streamed = true, .why = "nothing was dispatched before (a first install)"};
}

std::string SettingsSummary(const DispatcherSettings& s) {
  return absl::StrCat(
      "watchNamespace=", s.watch_namespace.empty() ? "<all>" : s.watch_namespace,
      " admin=", s.admin_listen,
      " kube=", s.kube.kubeconfig.empty() ? "in-cluster" : s.kube.kubeconfig,
      " store.poolSize=", s.store.pool_size, " leaderElection=", s.leader.enabled ? "on" : "off",
      " lease=", s.leader.lease_namespace, "/", s.leader.lease_name,
      " identity=", s.leader.identity, " sourceId=", s.reconciler.payload.source_id,
      " transport=", transport::RedactedSummary(s.transport), " workers=", s.workers,
      " specResync=", s.spec_resync ? "on" : "off",
      " skipLocalCluster=", s.reconciler.skip_local_cluster ? "on" : "off",
      " maxOutbox=", s.reconciler.max_outbox,
      " maestroRest=", s.maestro_rest.base_url.empty() ? "off" : s.maestro_rest.base_url,
      " firstList=", FirstListName(s.first_list),
      " gitopsCluster=", s.gitops_cluster_enabled ? "on" : "off",
      " manifests=", s.manifests.enabled() ? s.manifests.repo_server.address : "off");
}

}  // namespace mmi::dispatcher
