// GitOpsClusterController: the dispatcher's replacement for the upstream gitopscluster
// controller on the pull-model path (../shared/spec/hub-apis.md §4). For every GitOpsCluster
// it resolves the Placement's decisions (all PlacementDecisions with the placement label, paged),
// writes one blank Argo CD cluster secret per decided ManagedCluster into
// spec.argoServer.argoNamespace, creates the `acm-placement` / `acm-placementrule` ConfigMaps and
// the ApplicationSet controller's placement Role/RoleBinding there (create-only), and keeps the
// GitOpsCluster status conditions true to what happened. The pure pieces are in
// gitops_cluster.h. The controller owns the informers, the work queue and the loop, and wires
// its collaborators, each in its own header:
//   SpecReconciler         the steps of a valid spec: ArgoServerVerifier, AppSetResourceWriter,
//                          PlacementResolver, ClusterSecretWriter (each its own class)
//   StatusWriter           the status subresource, written only when it changed
//   OrphanSecretCollector  who wants which cluster secret; orphans deleted by the policy
//   AppSetRefreshTrigger   when ApplicationSets are refreshed (AppSetRefresher sends it)
//   RetrySchedule          per-key backoff of failed reconciles
//   GitOpsClusterMetrics   the metrics below
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
#include <map>
#include <memory>
#include <set>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "libs/common/backoff.h"
#include "libs/common/clock.h"
#include "libs/kube/informer.h"
#include "libs/kube/kube_client.h"
#include "libs/kube/work_queue.h"
#include "services/dispatcher/gitops/appset_refresh.h"
#include "services/dispatcher/gitops/appset_refresh_trigger.h"
#include "services/dispatcher/gitops/gitops_cluster.h"
#include "services/dispatcher/gitops/gitops_cluster_controller_settings.h"
#include "services/dispatcher/gitops/gitops_cluster_metrics.h"
#include "services/dispatcher/gitops/orphan_secret_collector.h"
#include "services/dispatcher/gitops/reconcile_result.h"
#include "services/dispatcher/gitops/retry_schedule.h"
#include "services/dispatcher/gitops/spec_reconciler.h"
#include "services/dispatcher/gitops/status_writer.h"

namespace prometheus {
class Registry;
}  // namespace prometheus

namespace mmi::dispatcher {

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
  // --- queue (any thread) ---
  void Enqueue(const std::string& key);

  // --- loop thread ---
  void Run(const std::stop_token& stop);
  bool WaitForInformers(const std::stop_token& stop);
  // Queues the keys whose retry is due; returns when the loop's next timer is due.
  std::chrono::steady_clock::time_point RunTimers();
  // Pops the next ready key, waiting at most `max_wait`; "" when none.
  std::string Pop(std::chrono::milliseconds max_wait);
  void Process(const std::string& key);
  // A "p:<ns>/<placement>" key: its GitOpsClusters are reconciled, its ApplicationSets are due.
  void ProcessPlacement(const std::string& placement_key);
  void EnqueueAllGitOpsClusters();
  void EnqueueForPlacement(const std::string& ns, const std::string& placement);
  void EnqueueForCluster(const std::string& cluster);
  ReconcileOutcome Reconcile(const std::string& ns, const std::string& name);
  // The GitOpsCluster `key` is gone or being deleted: what it wrote becomes orphans.
  void Forget(const std::string& key);
  void ScheduleRetry(const std::string& key);
  // Every informer that exists.
  std::vector<kube::Informer*> Informers() const;

  kube::KubeClient& client_;
  const Clock& clock_;
  const GitOpsClusterControllerSettings settings_;
  GitOpsClusterMetrics metrics_;

  std::unique_ptr<kube::Informer> gitops_clusters_;
  std::unique_ptr<kube::Informer> decisions_;
  std::unique_ptr<kube::Informer> managed_clusters_;
  std::unique_ptr<kube::Informer> secrets_;
  std::unique_ptr<kube::Informer> appsets_;        // with refresh_application_sets only
  std::unique_ptr<AppSetRefresher> refresher_;     // idem
  std::unique_ptr<AppSetRefreshTrigger> refresh_;  // idem
  std::vector<std::unique_ptr<kube::InformerHandler>> handlers_;
  std::unique_ptr<SpecReconciler> spec_;            // after the informers it reads
  std::unique_ptr<OrphanSecretCollector> orphans_;  // idem
  StatusWriter status_;

  kube::WorkQueue queue_;  // capacity: settings.max_queue_depth; shut down by Stop()

  // Loop-owned.
  RetrySchedule retries_;
  std::chrono::steady_clock::time_point next_resync_{};

  absl::Mutex lifecycle_mu_;
  bool started_ ABSL_GUARDED_BY(lifecycle_mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(lifecycle_mu_) = false;
  // Started by Start() under lifecycle_mu_; joined by the one Stop() that set stopped_.
  std::jthread loop_;
};

}  // namespace mmi::dispatcher
