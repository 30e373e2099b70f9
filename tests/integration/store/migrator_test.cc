// The migrator against a real PostgreSQL: every migration applies to an empty database, a second
// run applies nothing, concurrent runs serialise on the advisory lock, and edited or unknown
// migrations are refused.
#include "libs/store/postgres/migrator.h"

#include <gtest/gtest.h>

#include <future>
#include <pqxx/pqxx>

#include "tests/support/peer.h"

namespace mmi::store::postgres {
namespace {

TEST(MigratorTest, AppliesEveryMigrationToAnEmptyDatabaseOnce) {
  MMI_START_PEER(pg, "postgres");
  const MigratorSettings settings{.dsn = pg->Get("PG_DSN")};
  auto first = ApplyMigrations(settings, migrations::All());
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->applied.size(), migrations::All().size());
  EXPECT_EQ(first->current_version, migrations::All().back().version);

  auto second = ApplyMigrations(settings, migrations::All());
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_TRUE(second->applied.empty());

  pqxx::connection conn(pg->Get("PG_DSN"));
  pqxx::nontransaction tx(conn);
  for (const char* table : {"dispatched_resources", "outbox", "resource_status"}) {
    EXPECT_EQ(
        tx.exec_params1("SELECT count(*) FROM pg_tables WHERE tablename = $1", table)[0].as<int>(),
        1)
        << table;
  }
}

TEST(MigratorTest, ConcurrentStartsApplyEachMigrationExactlyOnce) {
  MMI_START_PEER(pg, "postgres");
  const MigratorSettings settings{.dsn = pg->Get("PG_DSN")};
  std::vector<std::future<absl::StatusOr<MigrateResult>>> runs;
  for (int i = 0; i < 4; ++i) {
    runs.push_back(std::async(std::launch::async,
                              [&] { return ApplyMigrations(settings, migrations::All()); }));
  }
  size_t total_applied = 0;
  for (auto& r : runs) {
    auto result = r.get();
    ASSERT_TRUE(result.ok()) << result.status();
    total_applied += result->applied.size();
  }
  EXPECT_EQ(total_applied, migrations::All().size());
}

TEST(MigratorTest, RefusesAnAppliedMigrationWhoseTextChanged) {
  MMI_START_PEER(pg, "postgres");
  const MigratorSettings settings{.dsn = pg->Get("PG_DSN")};
  const std::vector<migrations::Migration> v1 = {{1, "0001_a.sql", "CREATE TABLE a (x int);"}};
  ASSERT_TRUE(ApplyMigrations(settings, v1).ok());
  const std::vector<migrations::Migration> edited = {{1, "0001_a.sql", "CREATE TABLE a (y int);"}};
  EXPECT_EQ(ApplyMigrations(settings, edited).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(MigratorTest, RefusesADatabaseNewerThanTheBinary) {
  MMI_START_PEER(pg, "postgres");
  const MigratorSettings settings{.dsn = pg->Get("PG_DSN")};
  const std::vector<migrations::Migration> newer = {{1, "0001_a.sql", "SELECT 1;"},
                                                    {2, "0002_b.sql", "SELECT 2;"}};
  ASSERT_TRUE(ApplyMigrations(settings, newer).ok());
  const std::vector<migrations::Migration> older = {{1, "0001_a.sql", "SELECT 1;"}};
  EXPECT_EQ(ApplyMigrations(settings, older).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(MigratorTest, ABrokenMigrationFailsWithoutRecordingItself) {
  MMI_START_PEER(pg, "postgres");
  const MigratorSettings settings{.dsn = pg->Get("PG_DSN")};
  const std::vector<migrations::Migration> broken = {{1, "0001_bad.sql", "CREATE TABLE ("}};
  auto result = ApplyMigrations(settings, broken);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(std::string(result.status().message()).find("0001_bad.sql"), std::string::npos);
  pqxx::connection conn(pg->Get("PG_DSN"));
  pqxx::nontransaction tx(conn);
  EXPECT_EQ(tx.exec1("SELECT count(*) FROM mmi_schema_migrations")[0].as<int>(), 0);
}

TEST(MigratorTest, ReportsAnUnreachableDatabaseAsUnavailable) {
  const MigratorSettings settings{.dsn = "postgresql://mmi@127.0.0.1:1/mmi?connect_timeout=2"};
  EXPECT_EQ(ApplyMigrations(settings, migrations::All()).status().code(),
            absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace mmi::store::postgres
