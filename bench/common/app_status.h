// What the benchmarks put into an Argo CD Application's status: one synced, healthy Deployment
// per entry of `status.resources`, the bulk of a large real status.
#pragma once

#include <cstddef>
#include <string>

#include "nlohmann/json.hpp"

namespace mmi::bench {

inline nlohmann::json SyncedDeploymentStatus(std::size_t i) {
  return {{"group", "apps"},
          {"kind", "Deployment"},
          {"name", "guestbook-ui-" + std::to_string(i)},
          {"namespace", "guestbook"},
          {"status", "Synced"},
          {"health", {{"status", "Healthy"}}},
          {"version", "v1"}};
}

}  // namespace mmi::bench
