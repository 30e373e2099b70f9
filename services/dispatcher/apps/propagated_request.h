// The sync request (`operation`) and refresh annotation a hub Application carries to its spoke,
// as pure functions of the object (no I/O; thread-compatible). The dispatcher removes what it
// propagated once the broker accepted it (hub_writes.h: StripRequest), guarded by `test` ops on
// the very values that were sent, so a newer request is never removed by mistake.
#pragma once

#include <optional>
#include <string>

#include "nlohmann/json.hpp"

namespace mmi::dispatcher {

// What was propagated from a hub Application and must be removed after dispatch.
struct PropagatedRequest {
  std::optional<nlohmann::json> operation;  // the `operation` object sent
  std::optional<std::string> refresh;       // the refresh annotation value sent
  bool empty() const { return !operation && !refresh; }
};

// The request carried by `app` (its `operation` and refresh annotation, when present).
PropagatedRequest PropagatedRequestOf(const nlohmann::json& app);

// JSON patch (RFC 6902) removing exactly `request` from an Application; empty array when
// nothing to do.
nlohmann::json StripRequestPatch(const PropagatedRequest& request);

}  // namespace mmi::dispatcher
