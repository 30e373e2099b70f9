#include "libs/service/flags.h"

#include "absl/strings/str_cat.h"

namespace mmi::service {

void AddCommonFlags(CLI::App& cli, CommonFlags& flags) {
  cli.add_option("--config", flags.config_path, "YAML config file");
  cli.add_option("--kubeconfig", flags.kubeconfig,
                 "hub kubeconfig (default: KUBECONFIG / in-cluster)");
  cli.add_option("--context", flags.context, "kubeconfig context");
  cli.add_option("--store-dsn", flags.store_dsn, "PostgreSQL DSN (prefer env MMI_STORE_DSN)");
  cli.add_option("--admin-listen", flags.admin_listen, "host:port of /metrics, /healthz, /readyz");
  cli.add_option("--log-level", flags.log_level, "debug|info|warn|error");
  cli.add_option("--leader-elect", flags.leader_elect, "use a Lease for leader election");
  cli.add_option("--lease-namespace", flags.lease_namespace,
                 "namespace of the leader election Lease");
  cli.add_option("--identity", flags.identity, "leader election identity");
}

void ApplyCommonFlags(const CommonFlags& flags, HubSettings& hub, StoreSettings& store,
                      LeaderSettings& leader, std::string& admin_listen, std::string& log_level) {
  const auto set = [](const auto& flag, auto& field) {
    if (flag) {
      field = *flag;
    }
  };
  set(flags.kubeconfig, hub.kubeconfig);
  set(flags.context, hub.context);
  set(flags.store_dsn, store.dsn);
  set(flags.admin_listen, admin_listen);
  set(flags.log_level, log_level);
  set(flags.leader_elect, leader.enabled);
  set(flags.lease_namespace, leader.lease_namespace);
  set(flags.identity, leader.identity);
}

}  // namespace mmi::service
