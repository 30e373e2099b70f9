#include "libs/store/postgres/migrator.h"

#include <algorithm>
#include <map>
#include <pqxx/pqxx>

#include "absl/strings/str_cat.h"
#include "libs/common/log.h"
#include "libs/common/status_macros.h"
#include "libs/store/postgres/errors.h"

namespace mmi::store::postgres {
namespace {

// pg_advisory_lock key shared by every process that migrates this schema ("mmi-migr").
constexpr int64_t kMigrationLockKey = 0x6d6d692d6d696772;

const log::Logger& Log() {
  static const log::Logger logger("store.migrator");
  return logger;
}

// version -> (name, checksum) of the migrations recorded in mmi_schema_migrations.
using AppliedMigrations = std::map<int, std::pair<std::string, std::string>>;

absl::Status CheckAscending(const std::vector<migrations::Migration>& migrations) {
  for (size_t i = 1; i < migrations.size(); ++i) {
    if (migrations[i].version <= migrations[i - 1].version) {
      return absl::InternalError(
          absl::StrCat("migrations out of order: ", std::string(migrations[i].name), " after ",
                       std::string(migrations[i - 1].name)));
    }
  }
  return absl::OkStatus();
}

// Takes the session-level migration lock (waiting at most `lock_timeout`), then creates the
// history table if this is the first run.
void LockAndCreateHistory(pqxx::connection& conn, std::chrono::seconds lock_timeout) {
  pqxx::nontransaction tx(conn);
  tx.exec0(absl::StrCat("SET lock_timeout = '", lock_timeout.count(), "s'"));
  tx.exec1(absl::StrCat("SELECT pg_advisory_lock(", kMigrationLockKey, ")"));
  tx.exec0("SET lock_timeout = 0");
  tx.exec0(
      "CREATE TABLE IF NOT EXISTS mmi_schema_migrations ("
      " version integer PRIMARY KEY, name text NOT NULL, checksum text NOT NULL,"
      " applied_at timestamptz NOT NULL DEFAULT now())");
}

AppliedMigrations ReadApplied(pqxx::connection& conn) {
  AppliedMigrations applied;
  pqxx::nontransaction tx(conn);
  for (const auto& row : tx.exec("SELECT version, name, checksum FROM mmi_schema_migrations")) {
    applied[row[0].as<int>()] = {row[1].as<std::string>(), row[2].as<std::string>()};
  }
  return applied;
}

// kFailedPrecondition when the text of a migration applied earlier (with `applied_checksum`) has
// changed since.
absl::Status VerifyUnchanged(pqxx::connection& conn, const migrations::Migration& migration,
                             const std::string& applied_checksum) {
  pqxx::nontransaction tx(conn);
  const auto checksum =
      tx.exec_params1("SELECT md5($1)", std::string(migration.sql))[0].as<std::string>();
  if (checksum != applied_checksum) {
    return absl::FailedPreconditionError(
        absl::StrCat("migration ", std::string(migration.name),
                     " was applied with different contents (checksum ", applied_checksum, ", now ",
                     checksum, "): released migrations must never change; add a new one instead"));
  }
  return absl::OkStatus();
}

// Runs `migration` and records it in one transaction.
void ApplyAndRecord(pqxx::connection& conn, const migrations::Migration& migration) {
  const std::string sql(migration.sql);
  pqxx::work tx(conn);
  tx.exec(sql);
  tx.exec_params0(
      "INSERT INTO mmi_schema_migrations (version, name, checksum) "
      "VALUES ($1, $2, md5($3))",
      migration.version, std::string(migration.name), sql);
  tx.commit();
}

}  // namespace

absl::StatusOr<MigrateResult> ApplyMigrations(
    const MigratorSettings& settings, const std::vector<migrations::Migration>& migrations) {
  RETURN_IF_ERROR(CheckAscending(migrations));
  MigrateResult result;
  std::string step = "connect to PostgreSQL";
  try {
    pqxx::connection conn(settings.dsn);
    step = "take the migration lock";
    LockAndCreateHistory(conn, settings.lock_timeout);
    step = "read applied migrations";
    const AppliedMigrations applied = ReadApplied(conn);
    const int newest_known = migrations.empty() ? 0 : migrations.back().version;
    if (!applied.empty() && applied.rbegin()->first > newest_known) {
      return absl::FailedPreconditionError(
          absl::StrCat("the database schema is at version ", applied.rbegin()->first,
                       " but this binary knows migrations up to ", newest_known,
                       ": run a newer build (migrations are forward-only)"));
    }
    for (const auto& m : migrations) {
      const std::string name(m.name);
      if (auto it = applied.find(m.version); it != applied.end()) {
        step = absl::StrCat("verify migration ", name);
        RETURN_IF_ERROR(VerifyUnchanged(conn, m, it->second.second));
        continue;
      }
      step = absl::StrCat("apply migration ", name);
      ApplyAndRecord(conn, m);
      result.applied.push_back(m.version);
      Log().Info("applied migration", {{"version", m.version}, {"name", name}});
    }
    result.current_version = std::max(newest_known, applied.empty() ? 0 : applied.rbegin()->first);
    step = "release the migration lock";
    pqxx::nontransaction tx(conn);
    tx.exec1(absl::StrCat("SELECT pg_advisory_unlock(", kMigrationLockKey, ")"));
  } catch (const pqxx::sql_error& e) {
    if (std::string(e.sqlstate()) == "55P03") {
      return absl::DeadlineExceededError(
          absl::StrCat("migration lock not obtained within ", settings.lock_timeout.count(),
                       "s: another process is migrating or holds the lock"));
    }
    absl::Status status = StatusFromCurrentException(step);
    if (status.code() == absl::StatusCode::kUnknown) {
      status = absl::InternalError(std::string(status.message()));
    }
    return status;
  } catch (...) {
    return StatusFromCurrentException(step);
  }
  return result;
}

}  // namespace mmi::store::postgres
