// The StatusStore contract against a real PostgreSQL with the embedded migrations applied, plus
// the NOTIFY hand-off to the dispatcher. One server for the suite; every test gets its own
// database.
#include <gtest/gtest.h>

#include <chrono>
#include <pqxx/pqxx>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "libs/store/postgres/notification_listener.h"
#include "libs/store/postgres/status_store.h"
#include "libs/store/testing/status_store_contract.h"
#include "tests/integration/store/postgres_peer.h"

namespace mmi::store::testing {
namespace {

// Owns its pool; the store borrows it.
class OwningPostgresStatusStore final : public StatusStore {
 public:
  explicit OwningPostgresStatusStore(const std::string& dsn)
      : pool_({.dsn = dsn, .size = 2}), store_(pool_) {}
  absl::StatusOr<std::vector<HubAppRef>> LookupHubApps(
      const std::vector<std::string>& ids) override {
    return store_.LookupHubApps(ids);
  }
  absl::StatusOr<std::vector<DispatchedPayload>> LookupPayloads(
      const std::vector<std::string>& ids) override {
    return store_.LookupPayloads(ids);
  }
  absl::Status ForEachStaleManifestRender(
      const std::function<void(const std::string&, const std::string&)>& fn) override {
    return store_.ForEachStaleManifestRender(fn);
  }
  absl::Status ForEachAppliedStatus(const std::function<void(const AppliedStatus&)>& fn) override {
    return store_.ForEachAppliedStatus(fn);
  }
  absl::Status SaveAppliedStatuses(const std::vector<AppliedStatus>& s) override {
    return store_.SaveAppliedStatuses(s);
  }
  absl::Status ForEachResyncEntry(const std::function<void(const ResyncEntry&)>& fn) override {
    return store_.ForEachResyncEntry(fn);
  }
  absl::StatusOr<bool> MarkDeletionConfirmed(const std::string& id) override {
    return store_.MarkDeletionConfirmed(id);
  }
  absl::StatusOr<std::vector<AppSetCount>> AppSetCounts() override { return store_.AppSetCounts(); }

 private:
  postgres::ConnectionPool pool_;
  postgres::PostgresStatusStore store_;
};

std::string FreshDatabase() { return postgres_peer::FreshDatabase("status_contract_"); }

void SeedRow(const std::string& dsn, const HubAppRef& ref) {
  pqxx::connection conn(dsn);
  pqxx::work tx(conn);
  const auto opt = [&](const std::optional<std::string>& v) {
    return v ? tx.quote(*v) : std::string("NULL");
  };
  tx.exec0(
      "INSERT INTO dispatched_resources (resource_id, cluster, hub_namespace, hub_name, hub_uid, "
      "work_name, appset_namespace, appset_name, payload_hash, payload, deletion_state) VALUES (" +
      tx.quote(ref.resource_id) + "::uuid, " + tx.quote(ref.cluster) + ", " +
      tx.quote(ref.hub_namespace) + ", " + tx.quote(ref.hub_name) + ", 'uid', " +
      tx.quote(ref.hub_namespace + "-" + ref.hub_name) + ", " + opt(ref.appset_namespace) + ", " +
      opt(ref.appset_name) + ", 'h', '{}', " +
      std::to_string(static_cast<int>(ref.deletion_state)) + ")");
  tx.commit();
}

// What the dispatcher records for a bundle: the row with its payload, version and publication
// time, and for manifest delivery its manifest_renders row, in one transaction.
void SeedWithPayload(const std::string& dsn, const HubAppRef& ref, const std::string& payload) {
  pqxx::connection conn(dsn);
  pqxx::work tx(conn);
  const auto opt = [&](const std::optional<std::string>& v) {
    return v ? tx.quote(*v) : std::string("NULL");
  };
  const ManifestRenderRef m = ref.manifest.value_or(ManifestRenderRef{});
  std::string published = "NULL";
  if (m.last_published_at) {
    published = "(timestamptz 'epoch' + " +
                std::to_string(std::chrono::duration_cast<std::chrono::microseconds>(
                                   m.last_published_at->time_since_epoch())
                                   .count()) +
                " * interval '1 microsecond')";
  }
  tx.exec0(
      "INSERT INTO dispatched_resources (resource_id, cluster, hub_namespace, hub_name, hub_uid, "
      "work_name, appset_namespace, appset_name, version, payload_hash, payload, "
      "last_published_at) VALUES (" +
      tx.quote(ref.resource_id) + "::uuid, " + tx.quote(ref.cluster) + ", " +
      tx.quote(ref.hub_namespace) + ", " + tx.quote(ref.hub_name) + ", 'uid', " +
      tx.quote(ref.hub_namespace + "-" + ref.hub_name) + ", " + opt(ref.appset_namespace) + ", " +
      opt(ref.appset_name) + ", " + std::to_string(m.version) + ", " + tx.quote(m.payload_hash) +
      ", " + tx.quote(payload) + ", " + published +
      ") ON CONFLICT (resource_id) DO UPDATE SET version = EXCLUDED.version, "
      "payload_hash = EXCLUDED.payload_hash, payload = EXCLUDED.payload, "
      "last_published_at = EXCLUDED.last_published_at");
  if (ref.manifest) {
    tx.exec0(
        "INSERT INTO manifest_renders (resource_id, revision, source_type, render_error) VALUES (" +
        tx.quote(ref.resource_id) + ", " + tx.quote(m.revision) + ", " + tx.quote(m.source_type) +
        ", " + opt(m.render_error) +
        ") ON CONFLICT (resource_id) DO UPDATE SET revision = EXCLUDED.revision, "
        "source_type = EXCLUDED.source_type, render_error = EXCLUDED.render_error, "
        "updated_at = now()");
  }
  tx.commit();
}

StatusStoreUnderTest MakeFreshStore() {
  const std::string dsn = FreshDatabase();
  return {std::make_unique<OwningPostgresStatusStore>(dsn),
          [dsn](const HubAppRef& ref) { SeedRow(dsn, ref); },
          [dsn](const HubAppRef& ref, const std::string& payload) {
            SeedWithPayload(dsn, ref, payload);
          }};
}

INSTANTIATE_TEST_SUITE_P(Postgres, StatusStoreContract,
                         ::testing::Values(StatusStoreFactory{"Postgres", MakeFreshStore}),
                         [](const auto& info) { return info.param.name; });

using postgres_peer::Listener;

TEST(PostgresStatusStoreTest, NotifiesTheDispatcherWhenADeletionIsConfirmed) {
  const std::string dsn = FreshDatabase();
  const std::string id = "278f3a61-efe5-56de-abba-6aedbfcce272";
  SeedRow(dsn, HubAppRef{id, "cluster1", "argocd", "guestbook-cluster1", std::nullopt, std::nullopt,
                         DeletionState::kDeleteRequested, std::nullopt});
  pqxx::connection listen_conn(dsn);
  Listener listener(listen_conn);
  listen_conn.await_notification(0, 1);  // make sure LISTEN is active

  postgres::ConnectionPool pool({.dsn = dsn, .size = 1});
  postgres::PostgresStatusStore store(pool);
  ASSERT_TRUE(store.MarkDeletionConfirmed(id).ok());

  postgres_peer::AwaitFirstNotification(listen_conn, listener);
  ASSERT_EQ(listener.payloads, std::vector<std::string>{id});
  pqxx::connection check(dsn);
  pqxx::nontransaction tx(check);
  EXPECT_EQ(tx.exec1("SELECT deletion_state FROM dispatched_resources")[0].as<int>(), 2);
}

// The status sink's listener: the renders changed while nobody listened come from the sweep on
// connecting, later ones from the dispatcher's NOTIFY, all through the one callback.
TEST(PostgresStatusStoreTest, TheManifestRenderListenerSweepsThenReceivesNotifications) {
  const std::string dsn = FreshDatabase();
  postgres::ConnectionPool pool({.dsn = dsn, .size = 1});
  postgres::PostgresStatusStore store(pool);
  const std::string missed = "00000000-0000-5000-8000-000000000001";
  const std::string notified = "00000000-0000-5000-8000-000000000002";
  HubAppRef ref{missed,
                "cluster1",
                "argocd",
                "app-1",
                std::nullopt,
                std::nullopt,
                DeletionState::kLive,
                ManifestRenderRef{.revision = "9f2c4e1",
                                  .source_type = "Directory",
                                  .render_error = std::nullopt,
                                  .payload_hash = "h",
                                  .version = 1,
                                  .last_published_at = std::nullopt}};
  SeedWithPayload(dsn, ref, "{}");  // rendered, never written by the sink: stale

  struct Seen {
    absl::Mutex mu;
    std::vector<std::string> ids ABSL_GUARDED_BY(mu);
    size_t wanted = 0;
    // Waits for `n` ids; the limit guards against a hang, it is not a timing assertion.
    std::vector<std::string> Await(size_t n) {
      absl::MutexLock lock(&mu);
      wanted = n;
      mu.AwaitWithTimeout(
          absl::Condition(
              +[](Seen* s) ABSL_NO_THREAD_SAFETY_ANALYSIS { return s->ids.size() >= s->wanted; },
              this),
          absl::Seconds(60));
      return ids;
    }
  };
  Seen seen;
  postgres::NotificationListener listener(
      {.dsn = dsn, .channel = kManifestRenderChannel, .what = "manifest render changes"},
      [&store](const postgres::NotificationListener::Callback& report) {
        return store.ForEachStaleManifestRender(
            [&report](const std::string& id, const std::string& /*cluster*/) { report(id); });
      });
  listener.Start([&seen](const std::string& id) {
    absl::MutexLock lock(&seen.mu);
    seen.ids.push_back(id);
  });
  EXPECT_EQ(seen.Await(1), std::vector<std::string>{missed}) << "the sweep on connecting";
  {
    pqxx::connection conn(dsn);
    pqxx::work tx(conn);
    tx.exec0("NOTIFY " + std::string(kManifestRenderChannel) + ", " + tx.quote(notified));
    tx.commit();
  }
  EXPECT_EQ(seen.Await(2), (std::vector<std::string>{missed, notified}));
  listener.Stop();
}

TEST(PostgresStatusStoreTest, ReportsALostDatabaseAsUnavailable) {
  postgres::ConnectionPool pool(
      {.dsn = "postgresql://mmi@127.0.0.1:1/x?connect_timeout=2", .size = 1});
  postgres::PostgresStatusStore store(pool);
  EXPECT_EQ(store.AppSetCounts().status().code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace mmi::store::testing
