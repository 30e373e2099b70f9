#include "libs/service/settings.h"

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "libs/common/config.h"
#include "libs/common/log.h"
#include "libs/transport/settings_yaml.h"

namespace mmi::service {

kube::LeaderElectionSettings ElectionSettings(const LeaderSettings& s) {
  return kube::LeaderElectionSettings{s.lease_namespace,       s.lease_name,     s.identity,
                                      s.lease_duration,        s.renew_deadline, s.retry_period,
                                      /*release_on_stop=*/true};
}

void ReadHubSettings(config::YamlSection section, HubSettings& out) {
  section.Scalar("kubeconfig", out.kubeconfig);
  section.Scalar("context", out.context);
  section.Scalar("qps", out.qps);
  section.Scalar("burst", out.burst);
  section.Duration("requestTimeout", out.request_timeout);
}

void ReadStoreSettings(config::YamlSection section, StoreSettings& out) {
  section.Scalar("dsn", out.dsn);
  section.Scalar("poolSize", out.pool_size);
  section.Scalar("migrate", out.migrate);
}

void ReadLeaderSettings(config::YamlSection section, LeaderSettings& out) {
  section.Scalar("enabled", out.enabled);
  section.Scalar("namespace", out.lease_namespace);
  section.Scalar("name", out.lease_name);
  section.Scalar("identity", out.identity);
  section.Duration("leaseDuration", out.lease_duration);
  section.Duration("renewDeadline", out.renew_deadline);
  section.Duration("retryPeriod", out.retry_period);
}

EnvLookup ProcessEnvironment() {
  return [](const char* name) { return config::GetEnv(name); };
}

void ApplyCommonEnvironment(const EnvLookup& env, HubSettings& hub, StoreSettings& store,
                            LeaderSettings& leader, transport::TransportSettings& transport) {
  if (auto v = env("MMI_STORE_DSN"); v && !v->empty()) {
    store.dsn = *v;
  }
  transport::ApplyTransportSecrets(transport, env("MMI_TRANSPORT_PASSWORD"),
                                   env("MMI_TRANSPORT_TOKEN"));
  if (auto v = env("POD_NAMESPACE"); v && !v->empty() && leader.lease_namespace.empty()) {
    leader.lease_namespace = *v;
  }
  if (auto v = env("KUBECONFIG"); v && !v->empty() && hub.kubeconfig.empty()) {
    hub.kubeconfig = *v;
  }
  if (auto v = env("KUBERNETES_SERVICE_HOST")) {
    hub.in_cluster_host = *v;
  }
  if (auto v = env("KUBERNETES_SERVICE_PORT")) {
    hub.in_cluster_port = *v;
  }
}

void ValidateCommonSettings(const std::string& log_level, const HubSettings& hub,
                            const StoreSettings& store, const LeaderSettings& leader,
                            std::vector<std::string>& errors) {
  if (auto level = log::ParseLevel(log_level); !level.ok()) {
    errors.push_back(absl::StrCat("logLevel: ", level.status().message()));
  }
  if (store.dsn.empty()) {
    errors.emplace_back("store.dsn: required (or env MMI_STORE_DSN)");
  }
  if (store.pool_size < 1) {
    errors.emplace_back("store.poolSize: must be at least 1");
  }
  if (hub.kubeconfig.empty() && (hub.in_cluster_host.empty() || hub.in_cluster_port.empty())) {
    errors.emplace_back(
        "kube.kubeconfig: required outside a cluster (or env KUBECONFIG, or run in a pod: "
        "KUBERNETES_SERVICE_HOST/PORT)");
  }
  if (leader.enabled) {
    if (absl::Status v = kube::ValidateLeaderElectionSettings(ElectionSettings(leader)); !v.ok()) {
      errors.push_back(absl::StrCat("leaderElection: ", v.message()));
    }
  }
}

absl::Status InvalidIfAny(const std::vector<std::string>& errors) {
  if (errors.empty()) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrJoin(errors, "; "));
}

std::string Hostname(const std::string& fallback) {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) {
    return fallback;
  }
  return buf;
}

}  // namespace mmi::service
