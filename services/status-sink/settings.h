// Everything the status sink can be configured with, in one struct, with its defaults.
// Sources, weakest first: the defaults below < the YAML config file (--config) < environment
// (secrets and pod identity) < command-line flags. Only status_sink_app.cc reads them.
//
// YAML keys (camelCase) are given in parentheses; README.md has a full example. Validation
// reports every problem with its full field path.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "libs/transport/settings.h"
#include "services/status-sink/sink.h"
#include "services/status-sink/writer.h"

namespace mmi::status_sink {

struct KubeSettings {
  // (kubeconfig) path; "" = in-cluster config (KUBERNETES_SERVICE_HOST/PORT, service account).
  std::string kubeconfig;
  std::string context;  // (context) kubeconfig context; "" = current-context
  double qps = 100;     // (qps) client-side rate limit; <= 0 disables it (APF only)
  int burst = 200;      // (burst)
  std::chrono::milliseconds request_timeout{30'000};  // (requestTimeout) one PATCH
  // Filled from KUBERNETES_SERVICE_HOST / KUBERNETES_SERVICE_PORT.
  std::string in_cluster_host;
  std::string in_cluster_port;
};

struct StoreSettings {
  // (dsn) libpq connection string or URI; env MMI_STORE_DSN. Required. Never logged.
  std::string dsn;
  int pool_size = 4;    // (poolSize) PostgreSQL connections = store worker threads
  bool migrate = true;  // (migrate) apply migrations/ at start (advisory-locked)
};

struct LeaderSettings {
  bool enabled = true;          // (enabled) off only for a single replica / tests
  std::string lease_namespace;  // (namespace) default: env POD_NAMESPACE, else "default"
  std::string lease_name = "mmi-status-sink";  // (name)
  std::string identity;  // (identity) default: env POD_NAME (or hostname) + random suffix
  std::chrono::milliseconds lease_duration{15'000};  // (leaseDuration)
  std::chrono::milliseconds renew_deadline{10'000};  // (renewDeadline)
  std::chrono::milliseconds retry_period{2'000};     // (retryPeriod)
};

struct StatusSinkSettings {
  std::string log_level = "info";             // (logLevel) debug|info|warn|error
  std::string admin_listen = "0.0.0.0:8080";  // (admin.listenAddress) /metrics /healthz /readyz
  KubeSettings kube;                          // (kube)
  StoreSettings store;                        // (store)
  LeaderSettings leader;                      // (leaderElection)
  // (transport) `type: mqtt|grpc|kafka` plus one section per type (libs/transport/settings.h).
  // Its sourceId must be the dispatcher's: status events are addressed to that source.
  transport::TransportSettings transport;
  // (status) intakeCapacity, maxInFlight, maxPending, volatileInterval,
  // ignoreResourceHealthMessages, persistBatch, persistInterval, countsInterval, resyncChunk,
  // maxStatusBytes (see sink.h, coalescer.h, status_patch.h for meaning and defaults).
  SinkSettings sink;
  int writers = 16;       // (status.writers) threads issuing hub PATCHes concurrently
  WriterSettings writer;  // (status.fieldManager)
  // (shutdownTimeout) drain budget on SIGTERM; keep below terminationGracePeriodSeconds.
  std::chrono::milliseconds shutdown_timeout{25'000};
};

// Parses the YAML config file text over the defaults. kInvalidArgument naming the field path.
absl::StatusOr<StatusSinkSettings> ParseSettingsYaml(std::string_view yaml);

// Applies environment values (`getenv` is injected for tests): MMI_STORE_DSN,
// MMI_TRANSPORT_PASSWORD (MQTT password / Kafka SASL password), MMI_TRANSPORT_TOKEN (gRPC bearer
// token), POD_NAME, POD_NAMESPACE, KUBECONFIG, KUBERNETES_SERVICE_HOST/PORT.
using EnvLookup = std::function<std::optional<std::string>(const char* name)>;
void ApplyEnvironment(StatusSinkSettings& settings, const EnvLookup& env);

// Fills derived defaults (identity, lease namespace, the resync source id) and validates
// everything, reporting each problem by field path.
absl::Status FinalizeSettings(StatusSinkSettings& settings);

// Flags (CLI11) + file + environment, then FinalizeSettings(). `--help` returns kCancelled with
// the help text as message.
absl::StatusOr<StatusSinkSettings> LoadSettings(int argc, const char* const* argv,
                                                const EnvLookup& env);

// One line for the start-up log, secrets redacted.
std::string SettingsSummary(const StatusSinkSettings& settings);

}  // namespace mmi::status_sink
