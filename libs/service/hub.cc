#include "libs/service/hub.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "libs/common/log.h"
#include "libs/common/sleeper.h"
#include "libs/kube/rest_config.h"
#include "libs/metrics/build_info.h"
#include "prometheus/gauge.h"
#include "prometheus/registry.h"

namespace mmi::service {
namespace {

const log::Logger& Log() {
  static const log::Logger logger("service.leader");
  return logger;
}

absl::StatusOr<kube::RestConfig> HubRestConfig(const HubSettings& k) {
  if (!k.kubeconfig.empty()) {
    return kube::LoadKubeconfigFiles({k.kubeconfig}, k.context);
  }
  return kube::LoadInClusterConfig(kube::InClusterPaths{}, k.in_cluster_host, k.in_cluster_port);
}

}  // namespace

absl::StatusOr<HubConnection> ConnectHub(const HubSettings& settings, std::string_view service,
                                         const Clock& clock, prometheus::Registry* registry) {
  auto rest = HubRestConfig(settings);
  if (!rest.ok()) {
    return absl::Status(rest.status().code(),
                        absl::StrCat("kube config: ", rest.status().message()));
  }
  rest->user_agent = absl::StrCat("mmi-", std::string(service), "/", metrics::Version());
  HubConnection hub;
  hub.settings.rest = *std::move(rest);
  hub.settings.rate_limit = {settings.qps, settings.burst};
  hub.settings.request_timeout = settings.request_timeout;
  auto client =
      kube::HttpKubeClient::Create(hub.settings, clock, RealSleeper::Instance(), registry);
  if (!client.ok()) {
    return client.status();
  }
  hub.client = *std::move(client);
  return hub;
}

absl::StatusOr<HubConnection> AnnounceAndConnectHub(const log::Logger& log,
                                                    std::string_view service,
                                                    const std::string& config_summary,
                                                    const HubSettings& settings, const Clock& clock,
                                                    prometheus::Registry& registry) {
  metrics::RegisterBuildInfo(registry, std::string(service));
  log.Info("starting", {{"version", metrics::Version()},
                        {"allocator", metrics::Allocator()},
                        {"config", config_summary}});
  return ConnectHub(settings, service, clock, &registry);
}

absl::StatusOr<std::unique_ptr<LeaderCampaign>> LeaderCampaign::Create(
    const kube::HttpKubeClientSettings& hub, const LeaderSettings& settings, const Clock& clock,
    prometheus::Registry& registry, std::function<void()> on_started_leading,
    std::function<void()> on_stopped_leading) {
  return Create(hub, settings, clock, registry,
                kube::LeaderCallbacks{.on_started_leading = std::move(on_started_leading),
                                      .on_stopped_leading = std::move(on_stopped_leading),
                                      .on_new_leader = {}});
}

LeaderCampaign::LeaderCampaign(const LeaderSettings& settings, prometheus::Gauge& gauge,
                               kube::LeaderCallbacks callbacks)
    : settings_(settings), gauge_(gauge), callbacks_(std::move(callbacks)) {}

LeaderCampaign::~LeaderCampaign() { Stop(); }

absl::StatusOr<std::unique_ptr<LeaderCampaign>> LeaderCampaign::Create(
    const kube::HttpKubeClientSettings& hub, const LeaderSettings& settings, const Clock& clock,
    prometheus::Registry& registry, kube::LeaderCallbacks callbacks) {
  prometheus::Gauge& gauge =
      prometheus::BuildGauge()
          .Name("mmi_leader_election_is_leader")
          .Help("1 while this replica holds the service's Lease (or runs without one), else 0")
          .Register(registry)
          .Add({});
  // new: the constructor is private.
  std::unique_ptr<LeaderCampaign> campaign(
      new LeaderCampaign(settings, gauge, std::move(callbacks)));
  if (!settings.enabled) {
    return campaign;
  }
  kube::HttpKubeClientSettings lease_settings = hub;
  lease_settings.request_timeout = settings.retry_period;
  lease_settings.retry.max_retries = 0;
  auto lease_client =
      kube::HttpKubeClient::Create(lease_settings, clock, RealSleeper::Instance(), nullptr);
  if (!lease_client.ok()) {
    return lease_client.status();
  }
  campaign->lease_client_ = *std::move(lease_client);
  LeaderCampaign* self = campaign.get();
  campaign->elector_ = std::make_unique<kube::LeaderElector>(
      *campaign->lease_client_, clock, ElectionSettings(settings),
      kube::LeaderCallbacks{.on_started_leading = [self] { self->SetLeading(true); },
                            .on_stopped_leading = [self] { self->SetLeading(false); },
                            .on_new_leader =
                                [self](const std::string& holder) {
                                  Log().Info("leader observed", {{"holder", holder}});
                                  if (self->callbacks_.on_new_leader) {
                                    self->callbacks_.on_new_leader(holder);
                                  }
                                }});
  return campaign;
}

void LeaderCampaign::SetLeading(bool leading) {
  leading_.store(leading);
  gauge_.Set(leading ? 1 : 0);
  const auto& callback = leading ? callbacks_.on_started_leading : callbacks_.on_stopped_leading;
  if (callback) {
    callback();
  }
}

absl::Status LeaderCampaign::Start() {
  if (!elector_) {
    Log().Info("leader election disabled: leading");
    SetLeading(true);
    return absl::OkStatus();
  }
  if (absl::Status s = elector_->Start(); !s.ok()) {
    return s;
  }
  Log().Info("campaigning for leadership",
             {{"lease", absl::StrCat(settings_.lease_namespace, "/", settings_.lease_name)},
              {"identity", settings_.identity}});
  return absl::OkStatus();
}

void LeaderCampaign::Stop() {
  if (elector_) {
    elector_->Stop();  // a leader releases the Lease and gets on_stopped_leading
  }
}

}  // namespace mmi::service
