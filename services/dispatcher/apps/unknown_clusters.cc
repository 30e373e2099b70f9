#include "services/dispatcher/apps/unknown_clusters.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "libs/service/kube_event.h"
#include "services/dispatcher/apps/internal/reconciler_log.h"
#include "services/dispatcher/apps/payload.h"

namespace mmi::dispatcher {
UnknownClusters::UnknownClusters(Deps deps, const ReconcilerSettings& settings)
    : deps_(std::move(deps)), settings_(settings) {}

void UnknownClusters::Park(const std::string& key, const std::string& cluster,
                           const nlohmann::json& app) {
  auto [it, inserted] = parked_.try_emplace(key, Parked{cluster, std::nullopt});
  it->second.cluster = cluster;
  if (inserted) {
    deps_.metrics.UnknownCluster();
    deps_.metrics.parked().Set(static_cast<double>(parked_.size()));
    internal::ReconcilerLog().Warn(
        "Application targets an unknown ManagedCluster; parked until it appears",
        {{"resource", key}, {"cluster", cluster}});
  }
  deps_.metrics.Decision("unknown_cluster");
  const auto now = deps_.clock.MonotonicNow();
  if (!it->second.last_event ||
      now - *it->second.last_event >= settings_.unknown_cluster_event_interval) {
    it->second.last_event = now;
    WriteEvent(cluster, app);
  }
  if (!retry_armed_) {
    retry_armed_ = true;
    deps_.loop.PostAfter(settings_.unknown_cluster_retry, [this] { RetryAll(); });
  }
}

void UnknownClusters::WriteEvent(const std::string& cluster, const nlohmann::json& app) {
  service::KubeEventSpec spec;
  spec.reason = "UnknownManagedCluster";
  spec.message = absl::StrCat("ManagedCluster \"", cluster, "\" (annotation ", kClusterAnnotation,
                              ") does not exist on the hub; the Application is not dispatched "
                              "and will be retried when the cluster appears");
  spec.component = settings_.event_component;
  spec.instance = settings_.event_instance;
  const auto wall_now = deps_.clock.Now();
  const nlohmann::json event = service::MakeKubeEvent(
      app, spec, wall_now,
      absl::StrCat(absl::Hex(static_cast<uint64_t>(wall_now.time_since_epoch().count())),
                   absl::Hex(++event_counter_)));
  const std::string ns = event["metadata"]["namespace"].get<std::string>();
  deps_.workers.Post([this, ns, event] {
    auto created = deps_.hub.Create({"", "v1", "events", ns}, event, kube::WriteOptions{});
    deps_.metrics.HubWrite("event", created.ok() ? "ok" : "error");
    if (!created.ok()) {
      internal::ReconcilerLog().Warn(
          "could not write a Kubernetes Event",
          {{"namespace", ns}, {"error", std::string(created.status().message())}});
    }
  });
}

void UnknownClusters::Unpark(const std::string& key) {
  if (parked_.erase(key) > 0) {
    deps_.metrics.parked().Set(static_cast<double>(parked_.size()));
  }
}

void UnknownClusters::RetryAll() {
  retry_armed_ = false;
  for (const auto& [key, p] : parked_) {
    deps_.retry(key);
  }
}

void UnknownClusters::OnClusterAdded(const std::string& cluster) {
  for (const auto& [key, p] : parked_) {
    if (p.cluster == cluster) {
      deps_.retry(key);
    }
  }
}

}  // namespace mmi::dispatcher
