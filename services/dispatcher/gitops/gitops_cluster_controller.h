// GitOpsClusterController: the dispatcher's replacement for the upstream gitopscluster
// controller on the pull-model path (../shared/spec/hub-apis.md §4). For every GitOpsCluster
// it resolves the Placement's decisions (all PlacementDecisions with the placement label, paged),
// writes one blank Argo CD cluster secret per decided ManagedCluster into
// spec.argoServer.argoNamespace, creates the `acm-placement` / `acm-placementrule` ConfigMaps and
// the ApplicationSet controller's placement Role/RoleBinding there (create-only), and keeps the
// GitOpsCluster status conditions true to what happened. The pure pieces are in
// gitops_cluster.h.
//
// Reconcile of one GitOpsCluster, in order (hub-apis §4.4, non-agent path):
//   validate the spec -> namespace authorisation -> Argo CD server probe -> ConfigMaps + RBAC
//   -> Placement + PlacementDecisions -> ManagedClusters -> cluster secrets -> status.
// The status subresource is written with a JSON merge patch only when it changed.
//
// Cluster secrets it writes carry `app.kubernetes.io/managed-by=<settings.managed_by>` besides
// the upstream labels; only secrets with that label are ever deleted by it. A secret that no
// GitOpsCluster wants any more is an orphan; what happens to orphans is `orphan_secret_policy`
// (upstream: deleted only once the ManagedCluster is gone, §4.7). GitOpsClusters have no
// finalizer: a deleted GitOpsCluster's secrets become orphans; ConfigMaps and RBAC stay. A
// secret of ours superseded by another wanted one for the same cluster and namespace (e.g. after
// managedServiceAccountRef changed) and pointing to the same server is deleted whatever the
// policy, as upstream does (§4.5), so Argo CD never sees two clusters of one name.
//
// After a reconcile that followed a change of its Placement's decisions, the ApplicationSets
// reading those decisions are asked to refresh (appset_refresh.h), unless
// refresh_application_sets is off.
//
// Threads: one thread per informer (GitOpsClusters, PlacementDecisions, ManagedClusters, the
// Argo CD cluster secrets and ApplicationSets, all namespaces); their handlers only put keys into a
// bounded de-duplicating queue. One reconcile loop thread (named `gitops-loop`) drains it, owns all
// reconcile state and makes every write. Failed reconciles are retried with exponential
// backoff; every GitOpsCluster is reconciled again each `resync_period`.
//
// Metrics (on the injected registry):
//   mmi_gitopscluster_reconciles_total{result}    result: success|failed|error
//       (failed: a condition is False until the spec or the hub changes; error: retried)
//   mmi_gitopscluster_reconcile_duration_seconds  histogram
//   mmi_gitopscluster_managed_secrets             distinct cluster secrets the GitOpsClusters want
//   mmi_gitopscluster_queue_depth                 keys waiting in the work queue
//   mmi_gitopscluster_queue_overflows_total       keys dropped on a full queue (a resync follows)
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "libs/common/backoff.h"
#include "libs/common/clock.h"
#include "libs/kube/informer.h"
#include "libs/kube/kube_client.h"
#include "libs/kube/work_queue.h"
#include "services/dispatcher/gitops/appset_refresh.h"
#include "services/dispatcher/gitops/gitops_cluster.h"

namespace prometheus {
class Registry;
}  // namespace prometheus

namespace mmi::dispatcher {

// What happens to a cluster secret this controller wrote once no GitOpsCluster decides its
// cluster any more (decision removed, Placement or GitOpsCluster deleted or made invalid).
enum class OrphanSecretPolicy {
  // Upstream behaviour (hub-apis §4.7): delete it only when its ManagedCluster is gone (404).
  kDeleteWhenClusterGone,
  // Follow the decisions: delete it as soon as no GitOpsCluster decides its cluster.
  kDeleteWhenUndecided,
};

struct GitOpsClusterControllerSettings {
  // Every GitOpsCluster is reconciled again this often even without events (upstream: 5 min).
  std::chrono::seconds resync_period{300};
  // Delay before retrying a failed reconcile, per key: exponential with jitter (controller-
  // runtime's per-item limiter is 5 ms .. 1000 s; we start slower to spare the API server).
  BackoffSettings retry_backoff{.initial = std::chrono::milliseconds(1000),
                                .max = std::chrono::milliseconds(300'000),
                                .multiplier = 2.0,
                                .jitter = 0.2};
  // Capacity of the work queue in distinct keys. When full, new keys are dropped (counted in
  // mmi_gitopscluster_queue_overflows_total) and a full resync is run once the queue drains.
  size_t max_queue_depth = 10'000;
  // Page size (`limit`) for listing a Placement's PlacementDecisions (100 decisions each).
  int64_t decision_page_size = 100;
  // Page size of the informers' lists.
  int64_t informer_page_size = 500;
  // Field manager recorded on every write (<= 128 characters).
  std::string field_manager = "mmi-dispatcher";
  // Value of the `app.kubernetes.io/managed-by` label on the cluster secrets this controller
  // writes. Only secrets with this label are ever deleted by it.
  std::string managed_by = "mmi-dispatcher";
  // See OrphanSecretPolicy. Default: as upstream.
  OrphanSecretPolicy orphan_secret_policy = OrphanSecretPolicy::kDeleteWhenClusterGone;
  // Longest the idle loop waits before it re-checks its timers (retries, resync) against the
  // Clock. Lower it in tests that drive a fake clock.
  std::chrono::milliseconds timer_check_interval{1000};
  // When a Placement's decisions change, ask the ApplicationSets that read them to refresh
  // (appset_refresh.h), so a joining or leaving cluster does not wait for their requeue. Needs
  // list/watch/patch on applicationsets and create on events.
  bool refresh_application_sets = true;
  AppSetRefreshSettings appset_refresh;
};

// Label put on every cluster secret this controller writes (value: settings.managed_by).
inline constexpr char kManagedByLabel[] = "app.kubernetes.io/managed-by";

class GitOpsClusterController {
 public:
  // `client`, `clock` and `registry` are borrowed and must outlive the controller.
  GitOpsClusterController(kube::KubeClient& client, const Clock& clock,
                          GitOpsClusterControllerSettings settings, prometheus::Registry& registry);
  ~GitOpsClusterController();  // Stop()
  GitOpsClusterController(const GitOpsClusterController&) = delete;
  GitOpsClusterController& operator=(const GitOpsClusterController&) = delete;

  // Validates the settings (kInvalidArgument naming the field), starts the informers and the
  // reconcile loop. The loop reconciles once every informer has synced. Call once
  // (kFailedPrecondition otherwise).
  absl::Status Start();
  // Stops the informers, then the loop (an in-flight reconcile finishes first). Idempotent.
  void Stop();
  // Every informer has listed once (for /readyz).
  bool synced() const;

 private:
  class Handler;
  class SpecRun;  // one ReconcileSpec (gitops_cluster_spec.cc)
  struct Metrics;
  // Loop-owned memory of one GitOpsCluster's last reconcile.
  struct Managed {
    // "namespace/name" of each cluster secret it wants -> "namespace/cluster" it is for.
    std::map<std::string, std::string> secrets;
    std::set<std::string> clusters;  // clusters it decided
  };
  // The last status this controller wrote for a GitOpsCluster.
  struct WrittenStatus {
    std::string based_on;  // resourceVersion of the object it was computed from
    nlohmann::json status;
  };
  enum class Outcome { kSuccess, kFailed, kError };
  // What reconciling a valid spec decided: the status to write and what the GitOpsCluster wants
  // now (nullopt: keep what it wanted before, after a transient failure or unusable decisions).
  struct SpecResult {
    Outcome outcome = Outcome::kSuccess;
    nlohmann::json status;
    std::optional<Managed> managed;
  };

  // --- queue (any thread) ---
  void Enqueue(const std::string& key);

  // --- loop thread ---
  void Run(const std::stop_token& stop);
  bool WaitForInformers(const std::stop_token& stop);
  // Pops the next ready key, waiting at most `max_wait`; "" when none.
  std::string Pop(std::chrono::milliseconds max_wait);
  void Process(const std::string& key);
  void EnqueueAllGitOpsClusters();
  void EnqueueForPlacement(const std::string& ns, const std::string& placement);
  void EnqueueForCluster(const std::string& cluster);
  Outcome Reconcile(const std::string& ns, const std::string& name);
  // --- gitops_cluster_spec.cc: the steps after spec validation, from `status` as it was ---
  SpecResult ReconcileSpec(const nlohmann::json& gitops_cluster, const GitOpsClusterSpec& spec,
                           nlohmann::json status);
  // The Argo CD namespace may be used and has a server; a result when the reconcile stops.
  std::optional<SpecResult> VerifyArgoServer(const nlohmann::json& gitops_cluster,
                                             const GitOpsClusterSpec& spec, SpecRun& run);
  // The ManagedClusters the Placement decides; nullopt when the reconcile stops.
  std::optional<std::map<std::string, kube::ObjectPtr>> ResolvePlacement(
      const GitOpsClusterSpec& spec, SpecRun& run);
  SpecResult RegisterClusters(const nlohmann::json& gitops_cluster, const GitOpsClusterSpec& spec,
                              const std::map<std::string, kube::ObjectPtr>& cluster_objects,
                              bool retry, SpecRun& run);
  absl::Status EnsureAppSetResources(const std::string& argo_namespace);
  absl::Status CreateIfAbsent(const kube::ResourceRef& ref, const nlohmann::json& object);
  absl::Status WriteClusterSecret(const nlohmann::json& desired);
  Outcome CleanUpOrphans();
  // Replaces (nullopt: forgets) a GitOpsCluster's Managed, keeping wanted_ and the gauge right.
  void SetManaged(const std::string& key, std::optional<Managed> managed);
  void ScheduleRetry(const std::string& key);
  void ForgetRetry(const std::string& key);
  // After a reconcile of a GitOpsCluster of Placement `ns/placement`: refreshes the
  // ApplicationSets reading its decisions when they changed since the last time.
  void RefreshAppSetsIfDecided(const std::string& ns, const std::string& placement);
  // Every informer that exists.
  std::vector<kube::Informer*> Informers() const;

  kube::KubeClient& client_;
  const Clock& clock_;
  const GitOpsClusterControllerSettings settings_;
  std::unique_ptr<Metrics> metrics_;

  std::unique_ptr<kube::Informer> gitops_clusters_;
  std::unique_ptr<kube::Informer> decisions_;
  std::unique_ptr<kube::Informer> managed_clusters_;
  std::unique_ptr<kube::Informer> secrets_;
  std::unique_ptr<kube::Informer> appsets_;     // with refresh_application_sets only
  std::unique_ptr<AppSetRefresher> refresher_;  // idem
  std::vector<std::unique_ptr<Handler>> handlers_;

  kube::WorkQueue queue_;  // capacity: settings.max_queue_depth; shut down by Stop()

  // Loop-owned.
  std::map<std::string, Managed> managed_;        // by GitOpsCluster key "ns/name"
  std::map<std::string, int> wanted_;             // secret "ns/name" -> GitOpsClusters wanting it
  std::map<std::string, WrittenStatus> written_;  // by GitOpsCluster key
  std::map<std::string, std::chrono::steady_clock::time_point> delayed_;
  std::map<std::string, Backoff> retries_;
  // Placements ("ns/name") whose decisions changed and whose ApplicationSets were not asked to
  // refresh yet.
  std::set<std::string> refresh_pending_;
  bool appsets_unsynced_logged_ = false;
  std::chrono::steady_clock::time_point next_resync_{};

  absl::Mutex lifecycle_mu_;
  bool started_ ABSL_GUARDED_BY(lifecycle_mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(lifecycle_mu_) = false;
  // Started by Start() under lifecycle_mu_; joined by the one Stop() that set stopped_.
  std::jthread loop_;
};

}  // namespace mmi::dispatcher
