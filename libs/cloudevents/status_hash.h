// The `statushash` extension (../shared/spec/maestro-protocol.md §2.5): SHA-256, lowercase hex,
// of the ManifestWork `.status` serialized the way Go does it (unstructured map: keys sorted, no
// whitespace, zero-valued omitempty members dropped), i.e. of
//   {"conditions":[...],"resourceStatus":{"manifests":[...]}}
// built from a ManifestBundleStatus payload (`conditions` omitted when empty, `manifests` omitted
// when empty). Sources should treat hashes as opaque and echo them in status resync requests; this
// is for agents, tests and diagnostics. Thread-safe (pure functions).
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "libs/cloudevents/manifest_bundle.h"
#include "nlohmann/json.hpp"

namespace mmi::cloudevents {

// SHA-256 of the empty string: what Maestro reports for a resource that has no status yet.
inline constexpr std::string_view kEmptyStatusHash =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

// Lowercase hex SHA-256 of `bytes` (OpenSSL).
std::string Sha256Hex(std::string_view bytes);

// From the status payload exactly as received (the `data` of a status event, as JSON): the most
// faithful form, since it keeps Go's null-versus-empty distinctions. `manifestBundle` is ignored.
// kInvalidArgument when `status_data` is not an object or holds invalid members.
absl::StatusOr<std::string> StatusHashOfData(const nlohmann::json& status_data);
// From the typed payload (re-encoded first; equal to StatusHashOfData for what Go agents send).
absl::StatusOr<std::string> StatusHash(const ManifestBundleStatus& status);

}  // namespace mmi::cloudevents
