#include "tools/fleet-sim/fleet_sim_flags.h"

#include <cstdlib>

#include "CLI/CLI.hpp"
#include "libs/service/cli_parse.h"

namespace mmi::fleet_sim {
namespace {

double Seconds(std::chrono::milliseconds d) { return std::chrono::duration<double>(d).count(); }

std::chrono::milliseconds Milliseconds(double seconds) {
  return std::chrono::round<std::chrono::milliseconds>(std::chrono::duration<double>(seconds));
}

// The --sync-model flags (sync_model.h), in seconds on the command line.
class SyncModelFlags {
 public:
  explicit SyncModelFlags(const SyncModelSettings& defaults)
      : model_(SyncModelName(defaults.model)),
        auto_sync_delay_(Seconds(defaults.auto_sync_delay)),
        operation_duration_(Seconds(defaults.operation_duration)),
        progressing_duration_(Seconds(defaults.progressing_duration)) {}

  void Add(CLI::App& cli) {
    cli.add_option("--sync-model", model_,
                   "instant: every spec reported Synced/Healthy at once; argocd: follow each "
                   "Application's sync policy (automated sync after --auto-sync-delay, else "
                   "OutOfSync until an operation; Running -> Succeeded, Progressing -> Healthy)")
        ->check(CLI::IsMember({"instant", "argocd"}))
        ->capture_default_str();
    cli.add_option("--auto-sync-delay", auto_sync_delay_,
                   "argocd: seconds from OutOfSync (or drift, with selfHeal) to the automated sync")
        ->check(CLI::Range(0.0, 3600.0))
        ->capture_default_str();
    cli.add_option("--operation-duration", operation_duration_,
                   "argocd: seconds a sync operation stays Running")
        ->check(CLI::Range(0.0, 3600.0))
        ->capture_default_str();
    cli.add_option("--progressing-duration", progressing_duration_,
                   "argocd: seconds health stays Progressing after a sync; 0 = Healthy at once")
        ->check(CLI::Range(0.0, 3600.0))
        ->capture_default_str();
  }

  void ApplyTo(SyncModelSettings& settings) const {
    settings.model = *ParseSyncModel(model_);  // CLI::IsMember allows only known names
    settings.auto_sync_delay = Milliseconds(auto_sync_delay_);
    settings.operation_duration = Milliseconds(operation_duration_);
    settings.progressing_duration = Milliseconds(progressing_duration_);
  }

 private:
  std::string model_;
  double auto_sync_delay_;
  double operation_duration_;
  double progressing_duration_;
};

// The flags kept in other units than the settings': whole seconds and milliseconds.
struct TimeFlags {
  int refresh_min = 120;
  int refresh_max = 180;
  int duration = 0;
  int tick_ms = 1000;
};

void AddTransportFlags(CLI::App& cli, AppSettings& s) {
  cli.add_option("--transport", s.transport,
                 "mqtt | kafka | grpc (Maestro's gRPC broker: one Subscribe stream per cluster)")
      ->capture_default_str();
  cli.add_option("--broker", s.broker,
                 "broker host:port (Kafka: bootstrap servers; grpc: Maestro's gRPC broker)")
      ->required();
  cli.add_option("--source-id", s.source_id, "source id whose topics the agents use")
      ->capture_default_str();
  cli.add_option("--client-id", s.client_id, "MQTT client id / Kafka group id (default random)");
  cli.add_option("--mqtt-username", s.mqtt_username, "MQTT user name");
  cli.add_option("--mqtt-password", s.mqtt_password,
                 "MQTT password (prefer env FLEET_SIM_MQTT_PASSWORD)");
  cli.add_option("--mqtt-ca-file", s.mqtt_ca_file, "PEM CA bundle; enables TLS");
  cli.add_option("--mqtt-cert-file", s.mqtt_cert_file, "PEM client certificate (mTLS)");
  cli.add_option("--mqtt-key-file", s.mqtt_key_file, "PEM client key (mTLS)");
  cli.add_option("--mqtt-max-in-flight", s.mqtt_max_in_flight,
                 "publishes awaiting their PUBACK before publishing waits; 0 = no limit")
      ->capture_default_str();
  cli.add_option("--grpc-ca-file", s.grpc_ca_file, "PEM CA bundle of the gRPC broker; enables TLS");
  cli.add_option("--grpc-cert-file", s.grpc_cert_file, "PEM client certificate (mTLS)");
  cli.add_option("--grpc-key-file", s.grpc_key_file, "PEM client key (mTLS)");
}

void AddFleetFlags(CLI::App& cli, FleetSettings& fleet, TimeFlags& times) {
  cli.add_option("--clusters", fleet.clusters, "number of simulated clusters")
      ->capture_default_str();
  cli.add_option("--cluster-prefix", fleet.cluster_prefix, "cluster names are <prefix><i>")
      ->capture_default_str();
  cli.add_option("--cluster-digits", fleet.cluster_digits,
                 "zero-pad <i> to this many digits (4: cluster-0001); 0 = no padding")
      ->capture_default_str();
  cli.add_option("--refresh-min", times.refresh_min, "min seconds between reconciledAt bumps")
      ->capture_default_str();
  cli.add_option("--refresh-max", times.refresh_max,
                 "max seconds between reconciledAt bumps; 0 = off")
      ->capture_default_str();
  cli.add_option("--changes-per-minute", fleet.changes_per_minute,
                 "sync/health transitions per minute across the fleet")
      ->capture_default_str();
}

void AddLoopFlags(CLI::App& cli, AppSettings& s, TimeFlags& times) {
  FleetSettings& fleet = s.simulator.fleet;
  cli.add_option("--seed", fleet.seed, "churn random seed")->capture_default_str();
  cli.add_option("--tick-ms", times.tick_ms, "churn tick in milliseconds")->capture_default_str();
  cli.add_option("--postpone-refreshes-above", s.simulator.postpone_refreshes_above,
                 "received events waiting beyond which due reconciledAt refreshes are put off "
                 "one interval; 0 = never")
      ->capture_default_str();
  cli.add_option("--churn-slice", s.simulator.churn_slice,
                 "churn events published before the loop takes received events again")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cli.add_option("--max-intake", s.simulator.max_intake,
                 "received events waiting for the loop at most; more are dropped and counted")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cli.add_option("--metrics-listen", s.metrics_listen, "host:port of /metrics; empty = off")
      ->capture_default_str();
  cli.add_option("--duration", times.duration, "seconds to run; 0 = until SIGINT/SIGTERM")
      ->capture_default_str();
  cli.add_option("--log-level", s.log_level, "debug|info|warn|error")->capture_default_str();
  cli.add_option("--state-file", s.state_file,
                 "on SIGUSR1 write what every agent holds and last reported here (JSON)");
}

// --apply-cluster NAME=KUBECONFIG, as given.
struct ApplyFlags {
  std::vector<std::string> clusters;
  int status_sync = 10;
  bool background_deletion = false;
};

void AddApplyFlags(CLI::App& cli, ApplyFlags& flags) {
  cli.add_option("--apply-cluster", flags.clusters,
                 "NAME=KUBECONFIG (repeatable): apply mode for cluster NAME. Its ManifestBundles "
                 "are applied to the API server of KUBECONFIG as the OCM work agent does (the "
                 "bundle's update strategy: server-side apply with its field manager, Update, "
                 "CreateOnly), the objects are watched, status comes from the bundle's feedback "
                 "rules (JSONPaths, WellKnownStatus) with Applied/Available conditions, and a "
                 "delete follows the bundle's delete option, reporting Deleted once the objects "
                 "are gone. Every other cluster stays simulated");
  cli.add_option("--apply-status-sync", flags.status_sync,
                 "apply mode: seconds between re-reads of every applied object (the work "
                 "agent's status sync; watches report changes at once)")
      ->check(CLI::Range(1, 3600))
      ->capture_default_str();
  cli.add_flag("--apply-background-deletion", flags.background_deletion,
               "apply mode: delete with Background propagation instead of the work agent's "
               "Foreground, for API servers without a garbage collector (no "
               "kube-controller-manager), where foreground deletion never completes");
}

absl::Status ParseApplyClusters(const ApplyFlags& flags, AppSettings& s) {
  for (const std::string& entry : flags.clusters) {
    const auto eq = entry.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == entry.size()) {
      return absl::InvalidArgumentError("--apply-cluster: expected NAME=KUBECONFIG, got \"" +
                                        entry + "\"");
    }
    s.apply_clusters.push_back({entry.substr(0, eq), entry.substr(eq + 1)});
  }
  s.apply_status_sync = std::chrono::seconds(flags.status_sync);
  s.apply_background_deletion = flags.background_deletion;
  return absl::OkStatus();
}

absl::Status Validate(const FleetSettings& fleet, const TimeFlags& times) {
  if (fleet.clusters < 1) {
    return absl::InvalidArgumentError("--clusters: must be at least 1");
  }
  if (times.refresh_min < 1 || (times.refresh_max != 0 && times.refresh_max < times.refresh_min)) {
    return absl::InvalidArgumentError(
        "--refresh-min/--refresh-max: need 1 <= refresh-min <= refresh-max (or refresh-max 0)");
  }
  if (fleet.cluster_digits < 0 || fleet.cluster_digits > 9) {
    return absl::InvalidArgumentError("--cluster-digits: must be in [0, 9]");
  }
  if (fleet.changes_per_minute < 0) {
    return absl::InvalidArgumentError("--changes-per-minute: must not be negative");
  }
  if (times.duration < 0 || times.tick_ms < 10) {
    return absl::InvalidArgumentError("--duration >= 0 and --tick-ms >= 10 required");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<AppSettings> ParseFlags(int argc, char** argv) {
  AppSettings s;
  FleetSettings& fleet = s.simulator.fleet;
  fleet.clusters = 10;
  TimeFlags times;
  SyncModelFlags sync(fleet.agent.sync);
  CLI::App cli{"fleet-sim: N managed clusters' Maestro work agents (agent side of the protocol)"};
  AddTransportFlags(cli, s);
  AddFleetFlags(cli, fleet, times);
  sync.Add(cli);
  AddLoopFlags(cli, s, times);
  ApplyFlags apply;
  AddApplyFlags(cli, apply);
  if (absl::Status status = service::ParseFlags(cli, argc, argv); !status.ok()) {
    return status;
  }
  if (s.mqtt_password.empty()) {
    if (const char* env = std::getenv("FLEET_SIM_MQTT_PASSWORD"); env != nullptr) {
      s.mqtt_password = env;
    }
  }
  if (absl::Status status = Validate(fleet, times); !status.ok()) {
    return status;
  }
  if (absl::Status status = ParseApplyClusters(apply, s); !status.ok()) {
    return status;
  }
  sync.ApplyTo(fleet.agent.sync);
  fleet.agent.refresh_min = std::chrono::seconds(times.refresh_min);
  fleet.agent.refresh_max = std::chrono::seconds(times.refresh_max);
  s.duration = std::chrono::seconds(times.duration);
  s.simulator.tick = std::chrono::milliseconds(times.tick_ms);
  return s;
}

}  // namespace mmi::fleet_sim
