#include "services/dispatcher/gitops/gitops_cluster_controller_settings.h"

namespace mmi::dispatcher {

absl::Status ValidateGitOpsClusterControllerSettings(
    const GitOpsClusterControllerSettings& settings) {
  if (settings.max_queue_depth == 0) {
    return absl::InvalidArgumentError("gitops_cluster.max_queue_depth must be > 0");
  }
  if (settings.decision_page_size <= 0 || settings.informer_page_size <= 0) {
    return absl::InvalidArgumentError(
        "gitops_cluster.decision_page_size and gitops_cluster.informer_page_size must be > 0");
  }
  if (settings.field_manager.empty() || settings.field_manager.size() > 128) {
    return absl::InvalidArgumentError("gitops_cluster.field_manager must be 1..128 characters");
  }
  if (settings.managed_by.empty() || settings.managed_by.size() > 63) {
    return absl::InvalidArgumentError(
        "gitops_cluster.managed_by must be a label value (1..63 characters)");
  }
  if (settings.resync_period.count() <= 0 || settings.timer_check_interval.count() <= 0) {
    return absl::InvalidArgumentError(
        "gitops_cluster.resync_period and gitops_cluster.timer_check_interval must be > 0");
  }
  return absl::OkStatus();
}

}  // namespace mmi::dispatcher
