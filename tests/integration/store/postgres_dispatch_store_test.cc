// The DispatchStore contract against a real PostgreSQL with the embedded migrations applied.
// One server for the suite; every test gets its own database.
#include <gtest/gtest.h>

#include <atomic>
#include <pqxx/pqxx>

#include "libs/store/postgres/dispatch_store.h"
#include "libs/store/postgres/migrator.h"
#include "libs/store/testing/dispatch_store_contract.h"
#include "tests/support/peer.h"

namespace mmi::store::testing {
namespace {

std::unique_ptr<mmi::testing::PeerProcess>& Server() {
  static std::unique_ptr<mmi::testing::PeerProcess> server;
  return server;
}

// Owns its pool; the store borrows it.
class OwningPostgresStore final : public DispatchStore {
 public:
  explicit OwningPostgresStore(const std::string& dsn)
      : pool_({.dsn = dsn, .size = 2}), store_(pool_) {}
  absl::Status ForEachResource(const std::function<void(const DispatchedResource&)>& fn) override {
    return store_.ForEachResource(fn);
  }
  absl::StatusOr<std::optional<DispatchedResource>> GetResource(const std::string& id) override {
    return store_.GetResource(id);
  }
  absl::StatusOr<std::vector<DispatchedResource>> ResourcesOfCluster(
      const std::string& c) override {
    return store_.ResourcesOfCluster(c);
  }
  absl::StatusOr<std::vector<int64_t>> Record(const std::vector<DispatchChange>& c) override {
    return store_.Record(c);
  }
  absl::StatusOr<std::vector<OutboxEntry>> PendingOutbox(int64_t after, int limit) override {
    return store_.PendingOutbox(after, limit);
  }
  absl::Status MarkPublished(const std::vector<int64_t>& s,
                             std::chrono::system_clock::time_point at) override {
    return store_.MarkPublished(s, at);
  }
  absl::Status RecordPublishFailure(int64_t seq, const std::string& e) override {
    return store_.RecordPublishFailure(seq, e);
  }
  absl::Status MarkDeletionConfirmed(const std::string& id) override {
    return store_.MarkDeletionConfirmed(id);
  }
  absl::Status Forget(const std::string& id) override { return store_.Forget(id); }

 private:
  postgres::ConnectionPool pool_;
  postgres::PostgresDispatchStore store_;
};

std::unique_ptr<DispatchStore> MakeFreshStore() {
  static std::atomic<int> n{0};
  auto& server = Server();
  if (!server) {
    auto started = mmi::testing::PeerProcess::Start("postgres");
    if (!started.ok()) {
      ADD_FAILURE() << started.status();
      std::abort();  // a peer that cannot start fails loudly
    }
    server = std::move(*started);
  }
  const std::string db = "contract_" + std::to_string(n++);
  {
    pqxx::connection admin(server->Get("PG_DSN"));
    pqxx::nontransaction tx(admin);
    tx.exec0("CREATE DATABASE " + db);
  }
  const std::string dsn = "postgresql://mmi@127.0.0.1:" + server->Get("PG_PORT") + "/" + db;
  auto migrated = postgres::ApplyMigrations({.dsn = dsn}, migrations::All());
  EXPECT_TRUE(migrated.ok()) << migrated.status();
  return std::make_unique<OwningPostgresStore>(dsn);
}

INSTANTIATE_TEST_SUITE_P(Postgres, DispatchStoreContract,
                         ::testing::Values(DispatchStoreFactory{"Postgres", MakeFreshStore}),
                         [](const auto& info) { return info.param.name; });

class StopServer : public ::testing::Environment {
 public:
  void TearDown() override { Server().reset(); }
};
const auto* const kStopServer = ::testing::AddGlobalTestEnvironment(new StopServer);

TEST(PostgresDispatchStoreTest, ReportsALostDatabaseAsUnavailable) {
  postgres::ConnectionPool pool(
      {.dsn = "postgresql://mmi@127.0.0.1:1/x?connect_timeout=2", .size = 1});
  postgres::PostgresDispatchStore store(pool);
  EXPECT_EQ(store.PendingOutbox(0, 1).status().code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace mmi::store::testing
