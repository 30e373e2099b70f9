// The hub API client and the Lease campaign, wired the same way in both services.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "libs/common/clock.h"
#include "libs/common/log.h"
#include "libs/kube/http_kube_client.h"
#include "libs/kube/leader_elector.h"
#include "libs/service/settings.h"

namespace prometheus {
class Gauge;
class Registry;
}  // namespace prometheus

namespace mmi::service {

struct HubConnection {
  // What `client` was built with; the Lease client derives its own from it.
  kube::HttpKubeClientSettings settings;
  std::unique_ptr<kube::HttpKubeClient> client;
};

// The hub client of `service` ("dispatcher", "status-sink"): the kubeconfig file (and context)
// or the in-cluster config, user agent `mmi-<service>/<version>`, the client-side rate limit and
// the request timeout. Errors name the kube config problem.
absl::StatusOr<HubConnection> ConnectHub(const HubSettings& settings, std::string_view service,
                                         const Clock& clock, prometheus::Registry* registry);

// The first steps of a service's Start(): exports `mmi_build_info` for `service`, logs "starting"
// with the version and `config_summary`, then ConnectHub().
absl::StatusOr<HubConnection> AnnounceAndConnectHub(const log::Logger& log,
                                                    std::string_view service,
                                                    const std::string& config_summary,
                                                    const HubSettings& settings, const Clock& clock,
                                                    prometheus::Registry& registry);

// Campaigns for the service's Lease with its own client (request timeout = retry period, no
// retries: a renew stuck in retries would miss its deadline), logs the holders it observes and
// exports `mmi_leader_election_is_leader` (1 while this replica leads). With
// `settings.enabled` false there is no Lease: Start() leads at once.
//
// Callbacks run on the elector's thread (or in Start() without a Lease) and must not block.
// Lifecycle: Create(), Start(), Stop() (releases the Lease; idempotent).
class LeaderCampaign {
 public:
  static absl::StatusOr<std::unique_ptr<LeaderCampaign>> Create(
      const kube::HttpKubeClientSettings& hub, const LeaderSettings& settings, const Clock& clock,
      prometheus::Registry& registry, kube::LeaderCallbacks callbacks);
  // The same, for a service that only needs to hear that it leads and that it lost the Lease.
  static absl::StatusOr<std::unique_ptr<LeaderCampaign>> Create(
      const kube::HttpKubeClientSettings& hub, const LeaderSettings& settings, const Clock& clock,
      prometheus::Registry& registry, std::function<void()> on_started_leading,
      std::function<void()> on_stopped_leading);
  ~LeaderCampaign();  // Stop()
  LeaderCampaign(const LeaderCampaign&) = delete;
  LeaderCampaign& operator=(const LeaderCampaign&) = delete;

  absl::Status Start();
  void Stop();
  bool leading() const { return leading_.load(); }

 private:
  LeaderCampaign(const LeaderSettings& settings, prometheus::Gauge& gauge,
                 kube::LeaderCallbacks callbacks);
  void SetLeading(bool leading);

  const LeaderSettings settings_;
  prometheus::Gauge& gauge_;
  const kube::LeaderCallbacks callbacks_;
  std::unique_ptr<kube::HttpKubeClient> lease_client_;
  std::unique_ptr<kube::LeaderElector> elector_;
  std::atomic<bool> leading_{false};
};

}  // namespace mmi::service
