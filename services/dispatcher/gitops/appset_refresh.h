// Asking the ApplicationSet controller to look again when a Placement's decisions change.
//
// The controller does not watch PlacementDecisions: a `clusterDecisionResource` ApplicationSet
// sees a cluster join or leave only at its next requeue, up to `requeueAfterSeconds` (3 min by
// default) later (../shared/spec/hub-apis.md §2.5). The annotation
// `argocd.argoproj.io/application-set-refresh: "true"` makes it reconcile the ApplicationSet at
// once (it removes the annotation itself). After a GitOpsCluster reconcile that followed a change
// of its Placement's decisions (so the cluster secrets the generator needs are written), the
// GitOpsCluster controller sets it on exactly the ApplicationSets that read those decisions:
// a `clusterDecisionResource` generator (also nested in `matrix`/`merge`) whose duck-type
// ConfigMap is `acm-placement` and whose label selector matches the decisions' labels (or whose
// `name` is one of them). At most one refresh per ApplicationSet per `min_interval`; a change
// inside the interval is sent when it ends.
//
// Metrics: mmi_gitopscluster_appset_refreshes_total{result}  result: ok|not_found|error
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "libs/common/clock.h"
#include "libs/kube/informer.h"
#include "libs/kube/kube_client.h"
#include "nlohmann/json.hpp"

namespace prometheus {
class Registry;
}  // namespace prometheus

namespace mmi::dispatcher {

inline constexpr char kAppSetRefreshAnnotation[] = "argocd.argoproj.io/application-set-refresh";
// The duck-type ConfigMap through which generators read PlacementDecisions (hub-apis §2.2).
inline constexpr char kPlacementDuckConfigMap[] = "acm-placement";

// Whether `appset` reads `decision` (a PlacementDecision) through a clusterDecisionResource
// generator, top level or nested in matrix/merge generators, by label selector or name. The
// generator lists the duck resources in the ApplicationSet controller's namespace, whatever the
// ApplicationSet's own; the namespace is not compared here (the GitOpsCluster controller passes
// the decisions of its Placement, and an ApplicationSet of another namespace with a matching
// selector is at worst refreshed once for nothing). A malformed generator reads nothing.
bool ReadsDecision(const nlohmann::json& appset, const nlohmann::json& decision);

// What the informer keeps of an ApplicationSet: its identity and generators.
void ShrinkApplicationSet(nlohmann::json& appset);

struct AppSetRefreshSettings {
  // At most one refresh per ApplicationSet this often.
  std::chrono::milliseconds min_interval{2'000};
  std::string field_manager = "mmi-dispatcher";
  std::string event_instance;  // reportingInstance of the Events (the pod)
};

// Not thread-safe: the GitOpsCluster controller's loop thread owns it.
class AppSetRefresher {
 public:
  // `client`, `clock` and `registry` are borrowed and must outlive it.
  AppSetRefresher(kube::KubeClient& client, const Clock& clock, AppSetRefreshSettings settings,
                  prometheus::Registry& registry);
  ~AppSetRefresher();
  AppSetRefresher(const AppSetRefresher&) = delete;
  AppSetRefresher& operator=(const AppSetRefresher&) = delete;

  // The decisions of Placement `placement` (`decisions`: its PlacementDecisions now, none when
  // gone) changed and were reconciled: every ApplicationSet of `appsets` reading them is asked
  // to refresh now, or when its interval ends.
  void DecisionsChanged(const std::vector<kube::ObjectPtr>& appsets, const std::string& placement,
                        const std::vector<kube::ObjectPtr>& decisions);
  // Sends the refreshes whose interval has ended; returns when the next one is due.
  std::optional<std::chrono::steady_clock::time_point> SendDue();

 private:
  struct Metrics;
  struct Waiting {
    nlohmann::json appset;  // identity, for the patch and the Event
    std::string why;
  };
  void Send(const nlohmann::json& appset, const std::string& why);

  kube::KubeClient& client_;
  const Clock& clock_;
  const AppSetRefreshSettings settings_;
  std::unique_ptr<Metrics> metrics_;
  std::map<std::string, std::chrono::steady_clock::time_point> last_sent_;  // by "ns/name"
  std::map<std::string, Waiting> waiting_;                                  // by "ns/name"
  uint64_t event_counter_ = 0;
};

}  // namespace mmi::dispatcher
