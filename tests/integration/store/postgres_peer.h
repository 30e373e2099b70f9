// What the PostgreSQL store tests share: one real PostgreSQL peer per test binary (started on
// first use, stopped after the last test), a fresh migrated database per test, and a listener on
// the deletion-confirmed NOTIFY channel.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <pqxx/pqxx>
#include <string>
#include <utility>
#include <vector>

#include "libs/store/dispatch_store.h"
#include "libs/store/postgres/migrator.h"
#include "tests/support/peer.h"

namespace mmi::store::testing::postgres_peer {

inline std::unique_ptr<mmi::testing::PeerProcess>& Server() {
  static std::unique_ptr<mmi::testing::PeerProcess> server;
  return server;
}

class StopServer : public ::testing::Environment {
 public:
  void TearDown() override { Server().reset(); }
};
inline const auto* const kStopServer = ::testing::AddGlobalTestEnvironment(new StopServer);

// A fresh database `<prefix><n>` with the embedded migrations applied; returns its DSN. Starts the
// server on first use; a server that cannot start aborts the binary (the test fails loudly).
inline std::string FreshDatabase(const std::string& prefix) {
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
  const std::string db = prefix + std::to_string(n++);
  {
    pqxx::connection admin(server->Get("PG_DSN"));
    pqxx::nontransaction tx(admin);
    tx.exec0("CREATE DATABASE " + db);
  }
  const std::string dsn = "postgresql://mmi@127.0.0.1:" + server->Get("PG_PORT") + "/" + db;
  auto migrated = postgres::ApplyMigrations({.dsn = dsn}, migrations::All());
  EXPECT_TRUE(migrated.ok()) << migrated.status();
  return dsn;
}

// Receives notifications on one channel (default: the one the dispatcher's deletion listener
// subscribes).
class Listener final : public pqxx::notification_receiver {
 public:
  explicit Listener(pqxx::connection& conn, const char* channel = kDeletionConfirmedChannel)
      : pqxx::notification_receiver(conn, channel) {}
  void operator()(const std::string& payload, int /*backend_pid*/) override {
    payloads.push_back(payload);
  }
  std::vector<std::string> payloads;
};

// Waits up to 10 s until `listener` on `conn` has received a notification.
inline void AwaitFirstNotification(pqxx::connection& conn, const Listener& listener) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (listener.payloads.empty() && std::chrono::steady_clock::now() < deadline) {
    conn.await_notification(1, 0);
  }
}

}  // namespace mmi::store::testing::postgres_peer
