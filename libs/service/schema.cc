#include "libs/service/schema.h"

#include "absl/strings/str_cat.h"
#include "libs/common/log.h"
#include "libs/store/postgres/migrator.h"
#include "migrations/embedded_migrations.h"

namespace mmi::service {
namespace {

const log::Logger& Log() {
  static const log::Logger logger("service.schema");
  return logger;
}

}  // namespace

absl::Status ApplySchema(const StoreSettings& settings) {
  if (!settings.migrate) {
    return absl::OkStatus();
  }
  auto migrated = store::postgres::ApplyMigrations({.dsn = settings.dsn}, migrations::All());
  if (!migrated.ok()) {
    return absl::Status(migrated.status().code(),
                        absl::StrCat("migrations: ", migrated.status().message()));
  }
  Log().Info("schema ready", {{"version", migrated->current_version},
                              {"applied", static_cast<int64_t>(migrated->applied.size())}});
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<store::postgres::ConnectionPool>> OpenStore(
    const StoreSettings& settings) {
  if (absl::Status s = ApplySchema(settings); !s.ok()) {
    return s;
  }
  return std::make_unique<store::postgres::ConnectionPool>(
      store::postgres::ConnectionPoolSettings{settings.dsn, settings.pool_size});
}

}  // namespace mmi::service
