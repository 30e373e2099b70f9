#include "services/dispatcher/gitops/gitops_cluster_metrics.h"

#include "prometheus/family.h"

namespace mmi::dispatcher {

GitOpsClusterMetrics::GitOpsClusterMetrics(prometheus::Registry& registry) {
  auto& reconciles = prometheus::BuildCounter()
                         .Name("mmi_gitopscluster_reconciles_total")
                         .Help(
                             "GitOpsCluster reconciles by result (success; failed: a condition "
                             "is False until the spec or the hub changes; error: retried).")
                         .Register(registry);
  success = &reconciles.Add({{"result", "success"}});
  failed = &reconciles.Add({{"result", "failed"}});
  error = &reconciles.Add({{"result", "error"}});
  duration = &prometheus::BuildHistogram()
                  .Name("mmi_gitopscluster_reconcile_duration_seconds")
                  .Help("Time to reconcile one GitOpsCluster.")
                  .Register(registry)
                  .Add({}, prometheus::Histogram::BucketBoundaries{
                               0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60});
  managed_secrets = &prometheus::BuildGauge()
                         .Name("mmi_gitopscluster_managed_secrets")
                         .Help(
                             "Argo CD cluster secrets the GitOpsClusters want (written and "
                             "kept by this dispatcher).")
                         .Register(registry)
                         .Add({});
  queue_depth = &prometheus::BuildGauge()
                     .Name("mmi_gitopscluster_queue_depth")
                     .Help("Keys waiting in the GitOpsCluster work queue.")
                     .Register(registry)
                     .Add({});
  overflows = &prometheus::BuildCounter()
                   .Name("mmi_gitopscluster_queue_overflows_total")
                   .Help("Keys dropped because the GitOpsCluster work queue was full.")
                   .Register(registry)
                   .Add({});
}

}  // namespace mmi::dispatcher
