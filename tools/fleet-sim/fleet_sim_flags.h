// The fleet-sim command line (CLI11): every flag, its default, and the checks made before
// anything starts.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tools/fleet-sim/fleet_simulator.h"

namespace mmi::fleet_sim {

struct AppSettings {
  std::string transport = "mqtt";  // --transport mqtt|kafka|grpc
  // --broker host:port (Kafka: bootstrap servers; grpc: Maestro's gRPC broker, port 8091)
  std::string broker;
  std::string source_id = "app-work-client";    // --source-id
  std::string client_id;                        // --client-id (MQTT client id / Kafka group id)
  std::string mqtt_username;                    // --mqtt-username
  std::string mqtt_password;                    // --mqtt-password (or env FLEET_SIM_MQTT_PASSWORD)
  std::string mqtt_ca_file;                     // --mqtt-ca-file (enables TLS)
  std::string mqtt_cert_file;                   // --mqtt-cert-file
  std::string mqtt_key_file;                    // --mqtt-key-file
  std::size_t mqtt_max_in_flight = 5'000;       // --mqtt-max-in-flight
  std::string grpc_ca_file;                     // --grpc-ca-file (enables TLS)
  std::string grpc_cert_file;                   // --grpc-cert-file
  std::string grpc_key_file;                    // --grpc-key-file
  std::string metrics_listen = "0.0.0.0:9090";  // --metrics-listen; "" = no admin server
  std::chrono::seconds duration{0};             // --duration; 0 = until a signal
  std::string log_level = "info";               // --log-level
  // --state-file: on SIGUSR1 the agents' snapshot (Fleet::Snapshot() plus "generation", a count
  // of the snapshots written, and "written_at", Unix seconds) is written here (replaced
  // atomically). "" = SIGUSR1 is ignored.
  std::string state_file;
  SimulatorSettings simulator;
  // --apply-cluster NAME=KUBECONFIG (repeatable): clusters whose bundles are applied to a real
  // API server (apply mode, spoke_work_agent.h) instead of simulated.
  struct ApplyCluster {
    std::string name;
    std::string kubeconfig;
  };
  std::vector<ApplyCluster> apply_clusters;
  // --apply-status-sync: seconds between re-reads of every applied object.
  std::chrono::seconds apply_status_sync{10};
  // --apply-background-deletion: delete with Background propagation instead of Foreground.
  bool apply_background_deletion = false;
};

// Parses flags. kCancelled after printing --help; kInvalidArgument naming the flag.
absl::StatusOr<AppSettings> ParseFlags(int argc, char** argv);

}  // namespace mmi::fleet_sim
