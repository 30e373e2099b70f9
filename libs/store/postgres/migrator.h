// Applies the embedded SQL migrations (migrations/) to a PostgreSQL database, forward-only.
//
// Safe when several processes start together (two replicas, or both services): the whole run
// holds a session-level advisory lock, so one process applies and the others wait, then find
// nothing left to do. Each migration runs in its own transaction together with its row in
// `mmi_schema_migrations`. A migration already applied whose text has changed since is refused
// (kFailedPrecondition): migrations are immutable once released.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "migrations/embedded_migrations.h"

namespace mmi::store::postgres {

struct MigrateResult {
  std::vector<int> applied;  // versions applied by this call
  int current_version = 0;   // highest version present afterwards
};

struct MigratorSettings {
  std::string dsn;  // libpq connection string or URI
  // How long to wait for another process holding the migration lock.
  std::chrono::seconds lock_timeout{120};
};

// Applies every migration of `migrations` (ascending versions) not yet present.
// Errors: kUnavailable (cannot connect / lost connection: retry), kDeadlineExceeded (lock not
// obtained in time), kFailedPrecondition (an applied migration was edited, or the database has a
// newer schema than this binary knows), kInternal (a migration's SQL failed).
absl::StatusOr<MigrateResult> ApplyMigrations(const MigratorSettings& settings,
                                              const std::vector<migrations::Migration>& migrations);

}  // namespace mmi::store::postgres
