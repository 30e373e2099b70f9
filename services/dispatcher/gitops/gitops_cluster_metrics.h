// GitOpsClusterMetrics: the GitOpsCluster controller's metrics, registered on the injected
// registry (names and meanings: gitops_cluster_controller.h). The pointers stay valid as long as
// the registry.
#pragma once

#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace mmi::dispatcher {

struct GitOpsClusterMetrics {
  explicit GitOpsClusterMetrics(prometheus::Registry& registry);

  prometheus::Counter* success = nullptr;
  prometheus::Counter* failed = nullptr;
  prometheus::Counter* error = nullptr;
  prometheus::Histogram* duration = nullptr;
  prometheus::Gauge* managed_secrets = nullptr;
  prometheus::Gauge* queue_depth = nullptr;
  prometheus::Counter* overflows = nullptr;
};

}  // namespace mmi::dispatcher
