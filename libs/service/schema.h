// The PostgreSQL schema at start-up: both services apply migrations/ before opening their pool.
#pragma once

#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "libs/service/settings.h"
#include "libs/store/postgres/connection_pool.h"

namespace mmi::service {

// With `settings.migrate`, applies every embedded migration not yet applied (advisory-locked, so
// replicas starting together are safe) and logs the schema version; otherwise does nothing.
// Errors are prefixed with "migrations: ".
absl::Status ApplySchema(const StoreSettings& settings);

// ApplySchema(), then the pool of `settings.pool_size` connections both services query through.
absl::StatusOr<std::unique_ptr<store::postgres::ConnectionPool>> OpenStore(
    const StoreSettings& settings);

}  // namespace mmi::service
