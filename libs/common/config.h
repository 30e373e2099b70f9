// Small helpers for reading configuration at start-up. Only *_app.cc and main.cc call these;
// libraries receive plain Settings structs.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace mmi::config {

// The value of environment variable `name`, or nullopt when unset.
std::optional<std::string> GetEnv(const char* name);

// The whole file. kNotFound when it does not exist, kPermissionDenied / kInternal otherwise.
absl::StatusOr<std::string> ReadFile(const std::string& path);

// Go-style durations as Kubernetes and Maestro write them: "300ms", "10s", "5m", "1h30m", "0".
// Rejects negative values, unknown units and overflow with kInvalidArgument.
absl::StatusOr<std::chrono::milliseconds> ParseDuration(std::string_view text);

// "true"/"false"/"1"/"0"/"yes"/"no" (case-insensitive).
absl::StatusOr<bool> ParseBool(std::string_view text);

}  // namespace mmi::config
