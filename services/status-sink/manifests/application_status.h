// Manifest delivery (issue #38 §5): the hub Application's `.status`, as Argo CD v3.2 would show
// it, from what the dispatcher rendered and what the work agent reports for that ManifestBundle.
// Pure: the caller (the sink's writer path) supplies the rendered bundle, the decoded status
// (cloudevents::ManifestBundleStatusOf) and the time; it keeps what needs history
// (`health.lastTransitionTime`, a condition's time while its message stays, `history[]`).
//
// Rules (sink README, "Manifest delivery status"):
//   - resources[]: one entry per rendered manifest (hooks only once the agent reports them),
//     sorted by group, kind, namespace, name; `status` Synced when the agent reports it applied
//     at the bundle generation, OutOfSync otherwise, none for hooks and Skip resources; `health`
//     as ShownHealth (app_health.h) from the feedback (resource_health.h).
//   - sync.status: Unknown when nothing is rendered or the latest render failed (Argo CD's
//     ComparisonError state), Synced when the agent reports the bundle generation and every
//     counted resource Synced, OutOfSync otherwise; sync.revision the rendered revision;
//     sync.comparedTo the hub's source and destination.
//   - health.status: AggregateHealth (app_health.h).
//   - operationState: Running while the agent has not applied the generation, Succeeded once it
//     applied every resource, Failed when it reports an apply failure at that generation; absent
//     before the first rendered bundle.
//   - conditions: ComparisonError for a render error, SyncError for apply failures.
//   - summary.images (images.h), reconciledAt = `now`, sourceType.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "libs/cloudevents/manifest_bundle.h"
#include "nlohmann/json.hpp"

namespace mmi::status_sink {

// The bundle the dispatcher rendered and sent (the last good one when a later render failed).
struct RenderedBundle {
  std::vector<nlohmann::json> manifests;  // in bundle order: the agent's `ordinal`
  // Set instead of `manifests` by the sink, which holds one copy per render for all the clusters
  // it went to (borrowed for the call): no copy per report.
  const std::vector<nlohmann::json>* shared_manifests = nullptr;
  const std::vector<nlohmann::json>& Manifests() const {
    return shared_manifests != nullptr ? *shared_manifests : manifests;
  }
  std::string revision;         // the resolved revision they were rendered from
  std::int64_t generation = 0;  // the bundle generation (resourceversion) sent
  std::chrono::system_clock::time_point dispatched_at;  // operationState.startedAt
};

// The agent's latest status of that bundle.
struct AgentReport {
  const cloudevents::ManifestBundleStatus* status = nullptr;  // borrowed, never null
  std::int64_t generation = 0;                                // the status event's resourceversion
};

struct ManifestStatusInput {
  std::optional<RenderedBundle> bundle;  // nullopt before the first good render
  std::optional<AgentReport> report;     // nullopt until the agent reports
  // The latest render's error (timeout included); the bundle above stays on the spoke.
  std::optional<std::string> render_error;
  nlohmann::json source;       // the hub Application's spec.source
  nlohmann::json destination;  // its spec.destination
  std::string source_type;     // "Helm", "Kustomize", "Directory", "Plugin"; "" when unknown
  std::chrono::system_clock::time_point now;
};

// The `.status` object. kInvalidArgument naming the field when a manifest has no apiVersion,
// kind or metadata.name, or the report has no status.
absl::StatusOr<nlohmann::json> ApplicationStatusOf(const ManifestStatusInput& input);

}  // namespace mmi::status_sink
