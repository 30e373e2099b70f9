#include "tools/fleet-sim/fleet_sim_app.h"

#include <signal.h>

#include <cstdio>
#include <ctime>
#include <fstream>
#include <future>
#include <iostream>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "libs/common/clock.h"
#include "libs/common/log.h"
#include "libs/common/sleeper.h"
#include "libs/common/status_macros.h"
#include "libs/kube/http_kube_client.h"
#include "libs/kube/rest_config.h"
#include "libs/metrics/admin_server.h"
#include "nlohmann/json.hpp"
#include "prometheus/registry.h"
#include "tools/fleet-sim/fleet_metrics.h"
#include "tools/fleet-sim/fleet_simulator.h"
#include "tools/fleet-sim/mqtt_agent_transport.h"
#include "tools/fleet-sim/spoke_agent_runner.h"
#include "tools/fleet-sim/spoke_work_agent.h"
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
    for (const AppSettings::ApplyCluster& spoke : s.apply_clusters) {
      grpc.clusters.push_back(spoke.name);
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

// The apply-mode spokes (--apply-cluster): one API client, work agent and runner each.
class Spokes {
 public:
  absl::Status Add(const AppSettings::ApplyCluster& cluster, const AppSettings& settings,
                   const Clock& clock, cloudevents::SequenceIdGenerator& sequence_ids) {
    auto rest = kube::LoadKubeconfigFiles({cluster.kubeconfig});
    if (!rest.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--apply-cluster ", cluster.name, ": ", rest.status().message()));
    }
    kube::HttpKubeClientSettings client_settings;
    client_settings.rest = *std::move(rest);
    client_settings.rest.user_agent = "fleet-sim/work-agent";
    auto client = kube::HttpKubeClient::Create(std::move(client_settings), clock,
                                               RealSleeper::Instance(), nullptr);
    if (!client.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--apply-cluster ", cluster.name, ": ", client.status().message()));
    }
    SpokeAgentSettings agent_settings;
    agent_settings.max_bundle_bytes = settings.simulator.fleet.agent.max_bundle_bytes;
    agent_settings.limits = settings.simulator.fleet.agent.limits;
    if (settings.apply_background_deletion) {
      agent_settings.delete_propagation = kube::PropagationPolicy::kBackground;
    }
    auto agent = std::make_unique<SpokeWorkAgent>(cluster.name, agent_settings, **client, clock,
                                                  sequence_ids);
    SpokeRunnerSettings runner_settings;
    runner_settings.resync = settings.apply_status_sync;
    runners_.push_back(
        std::make_unique<SpokeAgentRunner>(std::move(agent), **client, runner_settings));
    clients_.push_back(*std::move(client));
    return absl::OkStatus();
  }
  const std::vector<std::unique_ptr<SpokeAgentRunner>>& runners() const { return runners_; }

 private:
  // Declared first: the runners (destroyed first) use the clients.
  std::vector<std::unique_ptr<kube::HttpKubeClient>> clients_;
  std::vector<std::unique_ptr<SpokeAgentRunner>> runners_;
};

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

// The /metrics and /readyz server on `listen` (nullptr when `listen` is empty), ready while
// the simulator is connected to the broker.
absl::StatusOr<std::unique_ptr<metrics::AdminServer>> StartAdminServer(
    const std::string& listen, std::shared_ptr<prometheus::Registry> registry,
    FleetSimulator& simulator) {
  if (listen.empty()) {
    return std::unique_ptr<metrics::AdminServer>();
  }
  auto admin = std::make_unique<metrics::AdminServer>(metrics::AdminServerSettings{listen, 2},
                                                      std::move(registry));
  admin->AddReadinessCheck("broker", [&simulator]() {
    return simulator.connected() ? absl::OkStatus()
                                 : absl::UnavailableError("not connected to the broker");
  });
  RETURN_IF_ERROR(admin->Start());
  return admin;
}

// Takes the blocked `signals` until SIGINT/SIGTERM or --duration, writing the state file on each
// SIGUSR1.
void WaitForStop(const sigset_t& signals, const AppSettings& settings, FleetSimulator& simulator) {
  const auto deadline = std::chrono::steady_clock::now() + settings.duration;
  std::int64_t state_generation = 0;
  while (true) {
    timespec timeout{1, 0};
    const int signal = sigtimedwait(&signals, nullptr, &timeout);
    if (signal == SIGUSR1) {
      if (!settings.state_file.empty()) {
        WriteStateFile(simulator, settings.state_file, ++state_generation);
      }
      continue;
    }
    if (signal == SIGINT || signal == SIGTERM) {
      Log().Info("signal received; stopping", {{"signal", signal}});
      return;
    }
    if (settings.duration.count() > 0 && std::chrono::steady_clock::now() >= deadline) {
      Log().Info("duration elapsed; stopping");
      return;
    }
  }
}

}  // namespace

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
  // The spokes' status events share one snowflake node, as the simulated agents' do.
  cloudevents::SequenceIdGenerator spoke_sequence_ids(clock);
  Spokes spokes;
  for (const AppSettings::ApplyCluster& cluster : settings->apply_clusters) {
    if (absl::Status status = spokes.Add(cluster, *settings, clock, spoke_sequence_ids);
        !status.ok()) {
      Log().Error("invalid flags", {{"error", std::string(status.message())}});
      return 2;
    }
  }
  FleetSimulator simulator(settings->simulator, **transport, clock, metrics);
  for (const auto& runner : spokes.runners()) {
    simulator.AddSpoke(*runner);
    Log().Info("apply mode", {{"cluster", runner->cluster()}});
  }

  auto admin = StartAdminServer(settings->metrics_listen, registry, simulator);
  if (!admin.ok()) {
    Log().Error("cannot start the admin server",
                {{"error", std::string(admin.status().message())}});
    return 1;
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

  WaitForStop(signals, *settings, simulator);
  simulator.Stop();
  if (*admin != nullptr) {
    (*admin)->Stop();
  }
  Log().Info("stopped", {{"applications", static_cast<int64_t>(simulator.application_count())}});
  return 0;
}

}  // namespace mmi::fleet_sim
