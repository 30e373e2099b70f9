#include "services/status-sink/settings.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "libs/cloudevents/resource_id.h"
#include "libs/common/config_yaml.h"
#include "libs/common/status_macros.h"
#include "libs/service/flags.h"
#include "libs/transport/settings_yaml.h"

namespace mmi::status_sink {
absl::StatusOr<StatusSinkSettings> ParseSettingsYaml(std::string_view yaml) {
  StatusSinkSettings s;
  config::YamlReader reader(yaml);
  config::YamlSection root = reader.Root();
  root.Scalar("logLevel", s.log_level);
  root.Section("admin").Scalar("listenAddress", s.admin_listen);
  service::ReadHubSettings(root.Section("kube"), s.kube);
  service::ReadStoreSettings(root.Section("store"), s.store);
  service::ReadLeaderSettings(root.Section("leaderElection"), s.leader);
  transport::ReadTransportSettings(root.Section("transport"), s.transport);

  config::YamlSection st = root.Section("status");
  st.Scalar("intakeCapacity", s.sink.intake_capacity);
  st.Scalar("maxInFlight", s.sink.max_in_flight);
  st.Scalar("maxPending", s.sink.coalescer.max_pending);
  st.Duration("volatileInterval", s.sink.coalescer.volatile_interval);
  st.Scalar("ignoreResourceHealthMessages", s.sink.coalescer.ignore_resource_health_messages);
  st.Scalar("persistBatch", s.sink.persist_batch);
  st.Duration("persistInterval", s.sink.persist_interval);
  st.Duration("countsInterval", s.sink.counts_interval);
  st.Scalar("resyncChunk", s.sink.resync_chunk);
  st.Scalar("maxStatusBytes", s.sink.patch.max_status_bytes);
  st.Scalar("maxManifestPayloads", s.sink.max_manifest_payloads);
  st.Scalar("maxManifestStatuses", s.sink.max_manifest_statuses);
  std::string progressing(ProgressingModeName(s.sink.progressing_before_healthy));
  st.Scalar("progressingBeforeHealthy", progressing);
  st.Duration("statusResyncMinInterval", s.sink.status_resync_min_interval);
  st.Scalar("writers", s.writers);
  st.Scalar("fieldManager", s.writer.field_manager);
  root.Duration("shutdownTimeout", s.shutdown_timeout);
  if (absl::Status status = reader.Finish(); !status.ok()) {
    return status;
  }
  ASSIGN_OR_RETURN(s.sink.progressing_before_healthy, ParseProgressingMode(progressing));
  return s;
}

void ApplyEnvironment(StatusSinkSettings& s, const EnvLookup& env) {
  service::ApplyCommonEnvironment(env, s.kube, s.store, s.leader, s.transport);
  if (auto v = env("POD_NAME"); v && !v->empty() && s.leader.identity.empty()) {
    s.leader.identity = *v + "_" + cloudevents::NewUuidV4().substr(0, 8);
  }
}

absl::Status FinalizeSettings(StatusSinkSettings& s) {
  if (s.leader.identity.empty()) {
    s.leader.identity =
        service::Hostname("mmi-status-sink") + "_" + cloudevents::NewUuidV4().substr(0, 8);
  }
  if (s.leader.lease_namespace.empty()) {
    s.leader.lease_namespace = "default";
  }
  s.sink.source_id = transport::SourceIdOf(s.transport);

  std::vector<std::string> errors;
  service::ValidateCommonSettings(s.log_level, s.kube, s.store, s.leader, errors);
  if (auto t = transport::ValidateTransportSettings(s.transport); !t.ok()) {
    errors.emplace_back(t.message());
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
  if (s.sink.max_manifest_payloads < 1) {
    errors.push_back("status.maxManifestPayloads: must be at least 1");
  }
  if (s.writers < 1) {
    errors.push_back("status.writers: must be at least 1");
  }
  if (s.writer.field_manager.empty() || s.writer.field_manager.size() > 128) {
    errors.push_back("status.fieldManager: must be 1 to 128 characters");
  }
  return service::InvalidIfAny(errors);
}

absl::StatusOr<StatusSinkSettings> LoadSettings(int argc, const char* const* argv,
                                                const EnvLookup& env) {
  CLI::App cli{"mmi status-sink: writes managed clusters' Argo CD status onto the hub"};
  service::CommonFlags flags;
  service::AddCommonFlags(cli, flags);
  RETURN_IF_ERROR(service::ParseFlags(cli, argc, argv));

  ASSIGN_OR_RETURN(StatusSinkSettings s, service::LoadConfigFile<StatusSinkSettings>(
                                             flags.config_path, ParseSettingsYaml));
  ApplyEnvironment(s, env);
  service::ApplyCommonFlags(flags, s.kube, s.store, s.leader, s.admin_listen, s.log_level);
  RETURN_IF_ERROR(FinalizeSettings(s));
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
      " status.progressingBeforeHealthy=",
      std::string(ProgressingModeName(s.sink.progressing_before_healthy)),
      " status.volatileInterval=", s.sink.coalescer.volatile_interval.count(), "ms");
}

}  // namespace mmi::status_sink
