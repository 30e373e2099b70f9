// The Argo CD resources finalizer on a hub Application, as pure functions of the object (no I/O;
// thread-compatible). Decide() asks HasResourcesFinalizer(); the hub writes (hub_writes.h) send
// ReleaseFinalizerPatch().
#pragma once

#include <optional>

#include "nlohmann/json.hpp"

namespace mmi::dispatcher {

// True when `app` lists resources-finalizer.argocd.argoproj.io.
bool HasResourcesFinalizer(const nlohmann::json& app);

// JSON patch (RFC 6902) removing every `resources-finalizer.argocd.argoproj.io` entry of `app`,
// each guarded by a `test` of its index; nullopt when `app` has none.
std::optional<nlohmann::json> ReleaseFinalizerPatch(const nlohmann::json& app);

}  // namespace mmi::dispatcher
