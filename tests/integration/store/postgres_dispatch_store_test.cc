// The DispatchStore contract against a real PostgreSQL with the embedded migrations applied.
// One server for the suite; every test gets its own database.
#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include "libs/store/postgres/dispatch_store.h"
#include "libs/store/testing/dispatch_store_contract.h"
#include "tests/integration/store/postgres_peer.h"

namespace mmi::store::testing {
namespace {

// Owns its pool; the store borrows it.
class OwningPostgresStore final : public DispatchStore {
 public:
  explicit OwningPostgresStore(const std::string& dsn)
      : pool_({.dsn = dsn, .size = 2}), store_(pool_) {}
  absl::Status ForEachResource(const std::function<void(const DispatchedResource&)>& fn) override {
    return store_.ForEachResource(fn);
  }
  absl::StatusOr<bool> HasResources() override { return store_.HasResources(); }
  absl::StatusOr<std::optional<DispatchedResource>> GetResource(const std::string& id) override {
    return store_.GetResource(id);
  }
  absl::StatusOr<ApplicationRows> LoadApplications(const std::vector<HubKey>& keys,
                                                   const std::vector<std::string>& ids) override {
    return store_.LoadApplications(keys, ids);
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
  absl::StatusOr<bool> MarkDeletionConfirmed(const std::string& id) override {
    return store_.MarkDeletionConfirmed(id);
  }
  absl::StatusOr<std::vector<std::string>> ConfirmedDeletions() override {
    return store_.ConfirmedDeletions();
  }
  absl::Status Forget(const std::string& id) override { return store_.Forget(id); }
  absl::Status PutManifestRender(const ManifestRender& r) override {
    return store_.PutManifestRender(r);
  }
  absl::StatusOr<std::optional<ManifestRender>> GetManifestRender(const std::string& id) override {
    return store_.GetManifestRender(id);
  }
  absl::StatusOr<AckSnapshot> UnacknowledgedResources(const AckWindow& window) override {
    return store_.UnacknowledgedResources(window);
  }
  absl::StatusOr<std::vector<AcknowledgedHandover>> AcknowledgedHandovers(int limit) override {
    return store_.AcknowledgedHandovers(limit);
  }

  // What the sink's SaveAppliedStatuses would leave, with `applied_at` chosen.
  void SeedAck(const std::string& id, std::optional<int32_t> acked,
               std::chrono::system_clock::time_point at) {
    const double epoch = std::chrono::duration<double>(at.time_since_epoch()).count();
    const absl::Status status = pool_.Run("seed an acknowledgement", [&](pqxx::connection& conn) {
      pqxx::work tx(conn);
      tx.exec_params0(
          "INSERT INTO resource_status (resource_id, last_sequence_id, status_hash, "
          "material_hash, acked_version, applied_at) VALUES ($1::uuid, 1, 'h', 'm', $2, "
          "to_timestamp($3)) ON CONFLICT (resource_id) DO UPDATE SET acked_version = "
          "EXCLUDED.acked_version, applied_at = EXCLUDED.applied_at",
          id, acked, epoch);
      tx.commit();
    });
    ASSERT_TRUE(status.ok()) << status;
  }

 private:
  postgres::ConnectionPool pool_;
  postgres::PostgresDispatchStore store_;
};

// A fresh database with the migrations applied; returns its DSN.
std::string FreshDatabase() { return postgres_peer::FreshDatabase("contract_"); }

std::unique_ptr<DispatchStore> MakeFreshStore() {
  return std::make_unique<OwningPostgresStore>(FreshDatabase());
}

INSTANTIATE_TEST_SUITE_P(Postgres, DispatchStoreContract,
                         ::testing::Values(DispatchStoreFactory{
                             "Postgres", MakeFreshStore,
                             [](DispatchStore& store, const std::string& id,
                                std::optional<int32_t> acked,
                                std::chrono::system_clock::time_point at) {
                               dynamic_cast<OwningPostgresStore&>(store).SeedAck(id, acked, at);
                             }}),
                         [](const auto& info) { return info.param.name; });

using postgres_peer::Listener;

TEST(PostgresDispatchStoreTest, NotifiesListenersWhenADeletionIsConfirmed) {
  const std::string dsn = FreshDatabase();
  postgres::ConnectionPool pool({.dsn = dsn, .size = 1});
  postgres::PostgresDispatchStore store(pool);
  DispatchChange change;
  change.resource.resource_id = "278f3a61-efe5-56de-abba-6aedbfcce272";
  change.resource.cluster = "cluster1";
  change.resource.hub_namespace = "argocd";
  change.resource.hub_name = "guestbook";
  change.resource.hub_uid = "uid";
  change.resource.work_name = "argocd-guestbook";
  change.resource.payload_hash = "h";
  change.resource.payload = "{}";
  change.resource.deletion_state = DeletionState::kDeleteRequested;
  change.event.resource_id = change.resource.resource_id;
  change.event.cluster = "cluster1";
  change.event.action = OutboxAction::kDelete;
  change.event.event = R"({"specversion":"1.0","id":"e"})";
  ASSERT_TRUE(store.Record({change}).ok());

  pqxx::connection listen_conn(dsn);
  Listener listener(listen_conn);
  listen_conn.await_notification(0, 1);  // make sure LISTEN is active
  ASSERT_TRUE(store.MarkDeletionConfirmed(change.resource.resource_id).ok());
  postgres_peer::AwaitFirstNotification(listen_conn, listener);
  EXPECT_EQ(listener.payloads, std::vector<std::string>{change.resource.resource_id});
  auto confirmed = store.ConfirmedDeletions();
  ASSERT_TRUE(confirmed.ok()) << confirmed.status();
  EXPECT_EQ(*confirmed, std::vector<std::string>{change.resource.resource_id});
}

TEST(PostgresDispatchStoreTest, NotifiesTheSinkOfEveryManifestRenderWrite) {
  const std::string dsn = FreshDatabase();
  postgres::ConnectionPool pool({.dsn = dsn, .size = 1});
  postgres::PostgresDispatchStore store(pool);
  DispatchChange change;
  change.resource.resource_id = "0d7d1e8c-5b9f-5a55-9a57-0c0b3f1e2a10";
  change.resource.cluster = "cluster1";
  change.resource.hub_namespace = "argocd";
  change.resource.hub_name = "guestbook";
  change.resource.hub_uid = "uid";
  change.resource.work_name = "argocd-guestbook";
  change.resource.payload_hash = "h";
  change.resource.payload = "{}";
  change.event.resource_id = change.resource.resource_id;
  change.event.cluster = "cluster1";
  change.event.event = R"({"specversion":"1.0","id":"e"})";
  change.manifest_render = ManifestRender{.resource_id = change.resource.resource_id,
                                          .revision = "sha-1",
                                          .source_type = "Helm",
                                          .render_error = std::nullopt};

  pqxx::connection listen_conn(dsn);
  Listener listener(listen_conn, kManifestRenderChannel);
  listen_conn.await_notification(0, 1);  // make sure LISTEN is active
  ASSERT_TRUE(store.Record({change}).ok());
  postgres_peer::AwaitFirstNotification(listen_conn, listener);
  EXPECT_EQ(listener.payloads, std::vector<std::string>{change.resource.resource_id});
  ManifestRender failed = *change.manifest_render;
  failed.render_error = "helm template: boom";
  ASSERT_TRUE(store.PutManifestRender(failed).ok());
  listener.payloads.clear();
  postgres_peer::AwaitFirstNotification(listen_conn, listener);
  EXPECT_EQ(listener.payloads, std::vector<std::string>{change.resource.resource_id});
}

TEST(PostgresDispatchStoreTest, ReportsALostDatabaseAsUnavailable) {
  postgres::ConnectionPool pool(
      {.dsn = "postgresql://mmi@127.0.0.1:1/x?connect_timeout=2", .size = 1});
  postgres::PostgresDispatchStore store(pool);
  EXPECT_EQ(store.PendingOutbox(0, 1).status().code(), absl::StatusCode::kUnavailable);
}

TEST(PostgresDispatchStoreTest, TellsItsObserverEveryCallWithItsOperationAndOutcome) {
  struct Call {
    std::string operation;
    bool ok = false;
  };
  std::vector<Call> calls;
  const StoreCallObserver observer = [&](std::string_view operation,
                                         std::chrono::nanoseconds elapsed, bool ok) {
    EXPECT_GE(elapsed.count(), 0);
    calls.push_back({std::string(operation), ok});
  };
  postgres::ConnectionPool pool({.dsn = FreshDatabase(), .size = 1});
  postgres::PostgresDispatchStore store(pool, observer);
  ASSERT_TRUE(store.PendingOutbox(0, 1).ok());
  ASSERT_TRUE(store.ConfirmedDeletions().ok());
  postgres::ConnectionPool lost_pool(
      {.dsn = "postgresql://mmi@127.0.0.1:1/x?connect_timeout=2", .size = 1});
  postgres::PostgresDispatchStore lost_store(lost_pool, observer);
  EXPECT_FALSE(lost_store.Forget("278f3a61-efe5-56de-abba-6aedbfcce272").ok());

  ASSERT_EQ(calls.size(), 3U);
  EXPECT_EQ(calls[0].operation, "pending_outbox");
  EXPECT_TRUE(calls[0].ok);
  EXPECT_EQ(calls[1].operation, "confirmed_deletions");
  EXPECT_TRUE(calls[1].ok);
  EXPECT_EQ(calls[2].operation, "forget");
  EXPECT_FALSE(calls[2].ok);
}

}  // namespace
}  // namespace mmi::store::testing
