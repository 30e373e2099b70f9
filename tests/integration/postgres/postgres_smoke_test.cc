// Smoke test: a real PostgreSQL 15 started by tests/peers/bin/start-postgres answers queries.
#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include "tests/support/peer.h"

namespace mmi {
namespace {

TEST(PostgresPeerTest, AnswersQueriesAndKeepsWrites) {
  MMI_START_PEER(pg, "postgres");
  pqxx::connection conn(pg->Get("PG_DSN"));
  {
    pqxx::work tx(conn);
    const auto version = tx.exec1("SHOW server_version")[0].as<std::string>();
    EXPECT_EQ(version.substr(0, 3), "15.");
    tx.exec0("CREATE TABLE smoke (id int PRIMARY KEY, name text NOT NULL)");
    tx.exec_params0("INSERT INTO smoke VALUES ($1, $2), ($3, $4)", 1, "one", 2, "two");
    tx.commit();
  }
  pqxx::connection other(pg->Get("PG_DSN"));
  pqxx::work tx(other);
  const auto rows = tx.exec("SELECT id, name FROM smoke ORDER BY id");
  ASSERT_EQ(rows.size(), 2U);
  EXPECT_EQ(rows[1][1].as<std::string>(), "two");
  EXPECT_EQ(tx.exec1("SELECT count(*) FROM pg_stat_activity WHERE datname = 'mmi'")[0].as<int>(),
            2);
}

}  // namespace
}  // namespace mmi
