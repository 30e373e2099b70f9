// GitOpsClusterControllerSettings (gitopsCluster.* of the dispatcher's config, filled by
// services/dispatcher/settings.cc) and the label on the cluster secrets the controller writes.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "libs/common/backoff.h"
#include "services/dispatcher/gitops/appset_refresh.h"

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

// OK, or kInvalidArgument naming the first bad field (gitops_cluster.<field>).
absl::Status ValidateGitOpsClusterControllerSettings(
    const GitOpsClusterControllerSettings& settings);

}  // namespace mmi::dispatcher
