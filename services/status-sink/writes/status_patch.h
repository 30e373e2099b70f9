// From a status report to the hub write: builds, from the spoke Application's `.status` (which
// FeedbackStatus, decoding/status_report.h, extracts from the event), the JSON merge patch
// `{"status": {...}}` for the hub Application (hub-apis.md §1.1, §6.4).
//
// The Application CRD has no status subresource, so the patch goes to the main resource and must
// pass the schema: `status.sync.status` is required once `sync` is present, `operationState`
// requires `operation`, `phase` and `startedAt`, conditions need `type` and `message`, history
// entries `id` and `deployedAt`, `syncResult` needs `revision`. A merge patch replaces lists
// whole but merges objects, so every known status member the spoke no longer reports is sent as
// `null` (two levels deep), which makes the hub status equal the spoke's without a GET.
// Thread-safe (pure functions).
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace mmi::status_sink {

struct StatusPatchSettings {
  // Largest status written to the hub (etcd objects are limited to about 1.5 MiB). Larger ones
  // lose `resources` and get one UnknownError condition instead, as Argo CD does on HTTP 413.
  std::size_t max_status_bytes = std::size_t{1} << 20;
};

// The merge patch body for the hub Application. `now` fills a missing operationState.startedAt.
// kInvalidArgument when `spoke_status` is not an object or stays too large after trimming.
absl::StatusOr<nlohmann::json> BuildStatusPatch(const nlohmann::json& spoke_status,
                                                const StatusPatchSettings& settings,
                                                std::chrono::system_clock::time_point now);

// Health values of Application `.status.health.status` that the Progressing-first rule uses.
inline constexpr char kHealthHealthy[] = "Healthy";
inline constexpr char kHealthProgressing[] = "Progressing";

// `.status.health.status` of an Application status, nullopt when absent or not a string.
std::optional<std::string> HealthOf(const nlohmann::json& status);

// Whether writing `status` must be preceded by a write showing health Progressing
// (hub-apis.md §1.7, §5.6: with RollingSync the ApplicationSet controller waits for a health
// transition, so the upstream status writer writes Progressing before Healthy). True when `status`
// reports Healthy and `last_written_health` - what the sink last wrote onto that hub Application,
// nullopt when nothing or no health - is neither Healthy nor Progressing.
bool NeedsProgressingFirst(const nlohmann::json& status,
                           const std::optional<std::string>& last_written_health);

// The merge patch written before `patch` (a BuildStatusPatch result) when NeedsProgressingFirst:
// the same status with `health.status` Progressing, so that only the health differs between the
// two writes.
nlohmann::json ProgressingPatch(nlohmann::json patch);

}  // namespace mmi::status_sink
