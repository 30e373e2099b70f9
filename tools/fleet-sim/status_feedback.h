// Status feedback as the OCM work agent reads it from a live object (fleet-sim's apply mode),
// with Maestro's `RawFeedbackJsonString` gate on: for each rule of a manifest, the values of its
// JSON paths. Pure functions.
//
//   JSONPaths        each path, evaluated as Kubernetes JSONPath: `.a.b`, `[n]`, `[*]` and
//                    filters `[?(@.type=="Ready")]`
//   WellKnownStatus  the agent's paths for apps/v1 Deployment (ReadyReplicas, Replicas,
//                    AvailableReplicas), batch/v1 Job (JobComplete, JobSucceeded) and v1 Pod
//                    (PodReady, PodPhase); an error for other kinds
//
// A path that matches nothing gives no value. One match: a string, an integer or a boolean as
// such, anything else (objects, arrays, floats, null) as `JsonRaw` compact JSON text, at most
// `max_json_raw` bytes. Several matches: a `JsonRaw` array of them.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "libs/cloudevents/manifest_bundle.h"
#include "nlohmann/json.hpp"

namespace mmi::fleet_sim {

// The agent's limit with Maestro's settings (1 MiB).
inline constexpr std::size_t kMaxJsonRawBytes = std::size_t{1024} * 1024;

// Every value `path` selects in `object`, in document order. kInvalidArgument for syntax this
// evaluator does not know (it names the path).
absl::StatusOr<std::vector<nlohmann::json>> EvaluateJsonPath(const nlohmann::json& object,
                                                             std::string_view path);

// The well-known paths for a group/version/kind; empty when it has none.
std::vector<cloudevents::JsonPath> WellKnownStatusPaths(std::string_view group,
                                                        std::string_view version,
                                                        std::string_view kind);

struct FeedbackResult {
  std::vector<cloudevents::FeedbackValue> values;
  // Why some rule or path gave no value ("" when all were read): the StatusFeedbackSynced
  // condition's message.
  std::string error;
};

// The values of `rules` on `live`, an object of group/version/kind.
FeedbackResult ReadFeedback(const std::vector<cloudevents::FeedbackRule>& rules,
                            const nlohmann::json& live, std::string_view group,
                            std::string_view version, std::string_view kind,
                            std::size_t max_json_raw = kMaxJsonRawBytes);

}  // namespace mmi::fleet_sim
