// The PostgreSQL schema at start-up: both services apply migrations/ before opening their pool.
#pragma once

#include "absl/status/status.h"
#include "libs/service/settings.h"

namespace mmi::service {

// With `settings.migrate`, applies every embedded migration not yet applied (advisory-locked, so
// replicas starting together are safe) and logs the schema version; otherwise does nothing.
// Errors are prefixed with "migrations: ".
absl::Status ApplySchema(const StoreSettings& settings);

}  // namespace mmi::service
