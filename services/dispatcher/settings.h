// Everything the dispatcher can be configured with, in one struct, with its defaults.
// Sources, weakest first: the defaults below < the YAML config file (--config) < environment
// (secrets and pod identity) < command-line flags. Only main.cc / dispatcher_app.cc read them.
//
// YAML keys (camelCase) are given in parentheses; see services/dispatcher/README.md for a full
// example. Validation reports every problem with its full field path.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "libs/transport/settings.h"
#include "services/dispatcher/gitops_cluster_controller.h"
#include "services/dispatcher/outbox.h"
#include "services/dispatcher/reconciler.h"

namespace mmi::dispatcher {

struct KubeSettings {
  // (kubeconfig) path; "" = in-cluster config (KUBERNETES_SERVICE_HOST/PORT, service account).
  std::string kubeconfig;
  std::string context;  // (context) kubeconfig context; "" = current-context
  double qps = 50;      // (qps) client-side rate limit; <= 0 disables it (APF only)
  int burst = 100;      // (burst)
  // (inCluster*) filled from KUBERNETES_SERVICE_HOST / KUBERNETES_SERVICE_PORT.
  std::string in_cluster_host;
  std::string in_cluster_port;
};

struct StoreSettings {
  // (dsn) libpq connection string or URI; env MMI_STORE_DSN. Required. Never logged.
  std::string dsn;
  int pool_size = 4;    // (poolSize) PostgreSQL connections of the worker pool
  bool migrate = true;  // (migrate) apply migrations/ at start (advisory-locked)
};

struct LeaderSettings {
  bool enabled = true;          // (enabled) off only for a single replica / tests
  std::string lease_namespace;  // (namespace) default: env POD_NAMESPACE, else "default"
  std::string lease_name = "mmi-dispatcher";  // (name)
  std::string identity;  // (identity) default: env POD_NAME (or hostname) + random suffix
  std::chrono::milliseconds lease_duration{15'000};  // (leaseDuration)
  std::chrono::milliseconds renew_deadline{10'000};  // (renewDeadline)
  std::chrono::milliseconds retry_period{2'000};     // (retryPeriod)
};

struct DispatcherSettings {
  std::string log_level = "info";  // (logLevel) debug|info|warn|error
  // (watchNamespace) Applications of this namespace only; "" = every namespace.
  std::string watch_namespace;
  std::string admin_listen = "0.0.0.0:8080";  // (admin.listenAddress) /metrics /healthz /readyz
  KubeSettings kube;                          // (kube)
  StoreSettings store;                        // (store)
  LeaderSettings leader;                      // (leaderElection)
  // (transport) `type: mqtt|grpc|kafka` plus one section per type (libs/transport/settings.h).
  // The transport's sourceId is also the source id of every resource id (payload).
  transport::TransportSettings transport;
  ReconcilerSettings reconciler;  // (dispatch)
  OutboxSettings outbox;          // (outbox)
  int workers = 4;                // (dispatch.workers) worker pool threads (store, hub writes)
  // (dispatch.specResync) answer agents' spec resync requests (MQTT, Kafka; gRPC never gets
  // them).
  bool spec_resync = true;
  // (dispatch.compactInformerStorage) keep cached Applications as MessagePack (less memory).
  bool compact_informer_storage = false;
  // (shutdownTimeout) graceful drain budget on SIGTERM; keep below
  // terminationGracePeriodSeconds.
  std::chrono::milliseconds shutdown_timeout{25'000};
  bool gitops_cluster_enabled = true;              // (gitopsCluster.enabled)
  GitOpsClusterControllerSettings gitops_cluster;  // (gitopsCluster)
};

// Parses the YAML config file text over the defaults. kInvalidArgument naming the field path.
absl::StatusOr<DispatcherSettings> ParseSettingsYaml(std::string_view yaml);

// Applies environment values (`getenv` is injected for tests): MMI_STORE_DSN,
// MMI_TRANSPORT_PASSWORD (MQTT password / Kafka SASL password), MMI_TRANSPORT_TOKEN (gRPC bearer
// token), POD_NAME, POD_NAMESPACE, KUBECONFIG, KUBERNETES_SERVICE_HOST/PORT.
using EnvLookup = std::function<std::optional<std::string>(const char* name)>;
void ApplyEnvironment(DispatcherSettings& settings, const EnvLookup& env);

// Fills derived defaults (identity, lease namespace, the dispatcher's own MQTT share group and
// Kafka consumer group so it never takes status events from the status sink) and validates.
absl::Status FinalizeSettings(DispatcherSettings& settings);

// flags (CLI11) + file + environment, then FinalizeSettings(). `--help` returns kCancelled
// with the help text as message.
absl::StatusOr<DispatcherSettings> LoadSettings(int argc, const char* const* argv,
                                                const EnvLookup& env);

// One line for the start-up log, secrets redacted.
std::string SettingsSummary(const DispatcherSettings& settings);

}  // namespace mmi::dispatcher
