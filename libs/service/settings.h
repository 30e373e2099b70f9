// The settings sections both services share, with their YAML keys (in parentheses) and readers:
// `kube` (the hub API), `store` (PostgreSQL) and `leaderElection` (the Lease). Each service puts
// them in its own Settings struct, with its own defaults where they differ (every member has a
// default initializer, so designated initializers may name only those), e.g.
//   service::HubSettings kube{.qps = 50, .burst = 100};
// Only the services' settings.cc and *_app.cc use them; libraries receive plain structs.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "libs/common/config_yaml.h"
#include "libs/kube/leader_elector.h"
#include "libs/transport/settings.h"

namespace mmi::service {

struct HubSettings {
  // (kubeconfig) path; "" = in-cluster config (KUBERNETES_SERVICE_HOST/PORT, service account).
  std::string kubeconfig{};
  std::string context{};  // (context) kubeconfig context; "" = current-context
  double qps = 50;        // (qps) client-side rate limit; <= 0 disables it (APF only)
  int burst = 100;        // (burst)
  // (requestTimeout) one Get/Create/Update/Patch/Delete (watches are not limited by it).
  std::chrono::milliseconds request_timeout{60'000};
  // Filled from KUBERNETES_SERVICE_HOST / KUBERNETES_SERVICE_PORT.
  std::string in_cluster_host{};
  std::string in_cluster_port{};
};

struct StoreSettings {
  // (dsn) libpq connection string or URI; env MMI_STORE_DSN. Required. Never logged.
  std::string dsn{};
  int pool_size = 4;    // (poolSize) PostgreSQL connections of the worker pool
  bool migrate = true;  // (migrate) apply migrations/ at start (advisory-locked)
};

struct LeaderSettings {
  bool enabled = true;            // (enabled) off only for a single replica / tests
  std::string lease_namespace{};  // (namespace) default: env POD_NAMESPACE, else "default"
  std::string lease_name{};       // (name) each service sets its own default
  std::string identity{};         // (identity) default: env POD_NAME (or hostname) + random suffix
  std::chrono::milliseconds lease_duration{15'000};  // (leaseDuration)
  std::chrono::milliseconds renew_deadline{10'000};  // (renewDeadline)
  std::chrono::milliseconds retry_period{2'000};     // (retryPeriod)
};

// The elector's settings (the Lease is released on stop, so a standby takes over at once).
kube::LeaderElectionSettings ElectionSettings(const LeaderSettings& settings);

// Readers of the sections above; errors go to the section's reader.
void ReadHubSettings(config::YamlSection section, HubSettings& out);
void ReadStoreSettings(config::YamlSection section, StoreSettings& out);
void ReadLeaderSettings(config::YamlSection section, LeaderSettings& out);

// `getenv`, injected so that tests give their own environment.
using EnvLookup = std::function<std::optional<std::string>(const char* name)>;
// The process environment (config::GetEnv).
EnvLookup ProcessEnvironment();

// The environment values both services take: MMI_STORE_DSN (always wins over the file),
// MMI_TRANSPORT_PASSWORD / MMI_TRANSPORT_TOKEN (transport::ApplyTransportSecrets), POD_NAMESPACE
// (lease namespace unless configured), KUBECONFIG (unless configured),
// KUBERNETES_SERVICE_HOST / KUBERNETES_SERVICE_PORT (in-cluster config).
void ApplyCommonEnvironment(const EnvLookup& env, HubSettings& hub, StoreSettings& store,
                            LeaderSettings& leader, transport::TransportSettings& transport);

// Appends one "<path>: <problem>" line per problem of the shared settings: logLevel, store.dsn
// (required), store.poolSize (>= 1), kube.kubeconfig (required outside a cluster) and, when
// enabled, leaderElection (kube::ValidateLeaderElectionSettings).
void ValidateCommonSettings(const std::string& log_level, const HubSettings& hub,
                            const StoreSettings& store, const LeaderSettings& leader,
                            std::vector<std::string>& errors);

// OK when `errors` is empty, else kInvalidArgument with every line joined by "; ".
absl::Status InvalidIfAny(const std::vector<std::string>& errors);

// This machine's host name, or `fallback` when it cannot be read.
std::string Hostname(const std::string& fallback);

}  // namespace mmi::service
