#include "tools/fleet-sim/fleet_sim_app.h"

#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <future>
#include <iostream>
#include <memory>
#include <utility>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "libs/common/clock.h"
#include "libs/common/log.h"
#include "libs/metrics/admin_server.h"
#include "nlohmann/json.hpp"
#include "prometheus/registry.h"
#include "tools/fleet-sim/fleet_metrics.h"
#ifdef MMI_FLEET_SIM_WITH_GRPC
#include "tools/fleet-sim/grpc_broker_agent_transport.h"
#endif
#ifdef MMI_FLEET_SIM_WITH_KAFKA
#include "tools/fleet-sim/kafka_agent_transport.h"
#endif

namespace mmi::fleet_sim {
namespace {

const log::Logger& Log() {
  static const log::Logger logger("fleet_sim");
  return logger;
}

absl::StatusOr<std::unique_ptr<AgentTransport>> MakeTransport(const AppSettings& s) {
  if (s.transport == "mqtt") {
    MqttAgentSettings mqtt;
    mqtt.broker_host = s.broker;
    mqtt.source_id = s.source_id;
    mqtt.client_id = s.client_id;
    mqtt.username = s.mqtt_username;
    mqtt.password = s.mqtt_password;
    mqtt.tls = !s.mqtt_ca_file.empty() || !s.mqtt_cert_file.empty();
    mqtt.ca_file = s.mqtt_ca_file;
    mqtt.client_cert_file = s.mqtt_cert_file;
    mqtt.client_key_file = s.mqtt_key_file;
    mqtt.max_in_flight = s.mqtt_max_in_flight;
    if (absl::Status status = ValidateMqttAgentSettings(mqtt); !status.ok()) {
      return status;
    }
    return std::make_unique<MqttAgentTransport>(std::move(mqtt));
  }
#ifdef MMI_FLEET_SIM_WITH_KAFKA
  if (s.transport == "kafka") {
    KafkaAgentSettings kafka;
    kafka.bootstrap_servers = s.broker;
    kafka.group_id = s.client_id;
    if (absl::Status status = ValidateKafkaAgentSettings(kafka); !status.ok()) {
      return status;
    }
    return std::make_unique<KafkaAgentTransport>(std::move(kafka));
  }
#endif
#ifdef MMI_FLEET_SIM_WITH_GRPC
  if (s.transport == "grpc") {
    GrpcBrokerAgentSettings grpc;
    grpc.grpc.url = s.broker;
    grpc.grpc.tls.enabled = !s.grpc_ca_file.empty() || !s.grpc_cert_file.empty();
    grpc.grpc.tls.ca_file = s.grpc_ca_file;
    grpc.grpc.tls.client_cert_file = s.grpc_cert_file;
    grpc.grpc.tls.client_key_file = s.grpc_key_file;
    const FleetSettings& fleet = s.simulator.fleet;
    for (int i = 1; i <= fleet.clusters; ++i) {
      grpc.clusters.push_back(ClusterName(fleet.cluster_prefix, i, fleet.cluster_digits));
    }
    if (absl::Status status = ValidateGrpcBrokerAgentSettings(grpc); !status.ok()) {
      return status;
    }
    return std::make_unique<GrpcBrokerAgentTransport>(std::move(grpc));
  }
#endif
  return absl::InvalidArgumentError(absl::StrCat(
      "--transport: must be mqtt, kafka or grpc (if built), got \"", s.transport, "\""));
}

// Asks the loop for the agents' snapshot and writes it to `path` (via a temporary file and a
// rename, so a reader never sees half of it).
void WriteStateFile(FleetSimulator& simulator, const std::string& path, std::int64_t generation) {
  auto promise = std::make_shared<std::promise<nlohmann::json>>();
  std::future<nlohmann::json> future = promise->get_future();
  simulator.RequestSnapshot(
      [promise](nlohmann::json snapshot) mutable { promise->set_value(std::move(snapshot)); });
  nlohmann::json snapshot;
  try {
    snapshot = future.get();
  } catch (const std::future_error&) {
    return;  // the simulator stopped first
  }
  snapshot["generation"] = generation;
  snapshot["written_at"] =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  const std::string tmp = absl::StrCat(path, ".tmp");
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << snapshot.dump();
    if (!out.good()) {
      Log().Error("cannot write the state file", {{"path", tmp}});
      return;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    Log().Error("cannot write the state file", {{"path", path}});
    return;
  }
  Log().Info("state file written", {{"path", path}, {"generation", generation}});
}

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

}  // namespace

absl::StatusOr<AppSettings> ParseFlags(int argc, char** argv) {
  AppSettings s;
  FleetSettings& fleet = s.simulator.fleet;
  fleet.clusters = 10;
  int refresh_min = 120;
  int refresh_max = 180;
  int duration = 0;
  int tick_ms = 1000;
  SyncModelFlags sync(fleet.agent.sync);
  CLI::App cli{"fleet-sim: N managed clusters' Maestro work agents (agent side of the protocol)"};
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
  cli.add_option("--clusters", fleet.clusters, "number of simulated clusters")
      ->capture_default_str();
  cli.add_option("--cluster-prefix", fleet.cluster_prefix, "cluster names are <prefix><i>")
      ->capture_default_str();
  cli.add_option("--cluster-digits", fleet.cluster_digits,
                 "zero-pad <i> to this many digits (4: cluster-0001); 0 = no padding")
      ->capture_default_str();
  cli.add_option("--refresh-min", refresh_min, "min seconds between reconciledAt bumps")
      ->capture_default_str();
  cli.add_option("--refresh-max", refresh_max, "max seconds between reconciledAt bumps; 0 = off")
      ->capture_default_str();
  cli.add_option("--changes-per-minute", fleet.changes_per_minute,
                 "sync/health transitions per minute across the fleet")
      ->capture_default_str();
  sync.Add(cli);
  cli.add_option("--seed", fleet.seed, "churn random seed")->capture_default_str();
  cli.add_option("--tick-ms", tick_ms, "churn tick in milliseconds")->capture_default_str();
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
  cli.add_option("--duration", duration, "seconds to run; 0 = until SIGINT/SIGTERM")
      ->capture_default_str();
  cli.add_option("--log-level", s.log_level, "debug|info|warn|error")->capture_default_str();
  cli.add_option("--state-file", s.state_file,
                 "on SIGUSR1 write what every agent holds and last reported here (JSON)");
  try {
    cli.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    return absl::CancelledError(cli.help());
  } catch (const CLI::ParseError& e) {
    return absl::InvalidArgumentError(absl::StrCat("flags: ", e.what()));
  }
  if (s.mqtt_password.empty()) {
    if (const char* env = std::getenv("FLEET_SIM_MQTT_PASSWORD"); env != nullptr) {
      s.mqtt_password = env;
    }
  }
  if (fleet.clusters < 1) {
    return absl::InvalidArgumentError("--clusters: must be at least 1");
  }
  if (refresh_min < 1 || (refresh_max != 0 && refresh_max < refresh_min)) {
    return absl::InvalidArgumentError(
        "--refresh-min/--refresh-max: need 1 <= refresh-min <= refresh-max (or refresh-max 0)");
  }
  if (fleet.cluster_digits < 0 || fleet.cluster_digits > 9) {
    return absl::InvalidArgumentError("--cluster-digits: must be in [0, 9]");
  }
  if (fleet.changes_per_minute < 0) {
    return absl::InvalidArgumentError("--changes-per-minute: must not be negative");
  }
  if (duration < 0 || tick_ms < 10) {
    return absl::InvalidArgumentError("--duration >= 0 and --tick-ms >= 10 required");
  }
  sync.ApplyTo(fleet.agent.sync);
  fleet.agent.refresh_min = std::chrono::seconds(refresh_min);
  fleet.agent.refresh_max = std::chrono::seconds(refresh_max);
  s.duration = std::chrono::seconds(duration);
  s.simulator.tick = std::chrono::milliseconds(tick_ms);
  return s;
}

int FleetSimMain(int argc, char** argv) {
  log::SetServiceName("fleet-sim");
  auto settings = ParseFlags(argc, argv);
  if (absl::IsCancelled(settings.status())) {
    std::cout << settings.status().message();
    return 0;
  }
  if (!settings.ok()) {
    Log().Error("invalid flags", {{"error", std::string(settings.status().message())}});
    return 2;
  }
  if (auto level = log::ParseLevel(settings->log_level); level.ok()) {
    log::SetMinLevel(*level);
  } else {
    Log().Error("invalid flags", {{"error", "--log-level: debug|info|warn|error"}});
    return 2;
  }
  auto transport = MakeTransport(*settings);
  if (!transport.ok()) {
    Log().Error("invalid flags", {{"error", std::string(transport.status().message())}});
    return 2;
  }

  // Signals are taken synchronously by this thread (blocked before any other thread starts).
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  // Shared with AdminServer, which takes a shared_ptr to the registry it serves.
  auto registry = std::make_shared<prometheus::Registry>();
  FleetMetrics metrics(*registry);
  Clock& clock = RealClock::Instance();
  FleetSimulator simulator(settings->simulator, **transport, clock, metrics);

  std::unique_ptr<metrics::AdminServer> admin;
  if (!settings->metrics_listen.empty()) {
    admin = std::make_unique<metrics::AdminServer>(
        metrics::AdminServerSettings{settings->metrics_listen, 2}, registry);
    admin->AddReadinessCheck("broker", [&simulator]() {
      return simulator.connected() ? absl::OkStatus()
                                   : absl::UnavailableError("not connected to the broker");
    });
    if (absl::Status status = admin->Start(); !status.ok()) {
      Log().Error("cannot start the admin server", {{"error", std::string(status.message())}});
      return 1;
    }
  }
  Log().Info("starting",
             {{"transport", settings->transport},
              {"broker", settings->broker},
              {"source_id", settings->source_id},
              {"clusters", settings->simulator.fleet.clusters},
              {"cluster_prefix", settings->simulator.fleet.cluster_prefix},
              {"changes_per_minute", settings->simulator.fleet.changes_per_minute},
              {"sync_model", SyncModelName(settings->simulator.fleet.agent.sync.model)}});
  if (absl::Status status = simulator.Start(); !status.ok()) {
    Log().Error("cannot start", {{"error", std::string(status.message())}});
    return 1;
  }

  const auto deadline = std::chrono::steady_clock::now() + settings->duration;
  std::int64_t state_generation = 0;
  while (true) {
    timespec timeout{1, 0};
    const int signal = sigtimedwait(&signals, nullptr, &timeout);
    if (signal == SIGUSR1) {
      if (!settings->state_file.empty()) {
        WriteStateFile(simulator, settings->state_file, ++state_generation);
      }
      continue;
    }
    if (signal == SIGINT || signal == SIGTERM) {
      Log().Info("signal received; stopping", {{"signal", signal}});
      break;
    }
    if (settings->duration.count() > 0 && std::chrono::steady_clock::now() >= deadline) {
      Log().Info("duration elapsed; stopping");
      break;
    }
  }
  simulator.Stop();
  if (admin != nullptr) {
    admin->Stop();
  }
  Log().Info("stopped", {{"applications", static_cast<int64_t>(simulator.application_count())}});
  return 0;
}

}  // namespace mmi::fleet_sim
