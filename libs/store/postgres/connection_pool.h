// A bounded pool of libpqxx connections. Each Run() borrows one connection for the duration of
// `fn` (a libpqxx connection is used by one thread at a time), reconnecting lazily after a broken
// connection. Exceptions thrown by `fn` are mapped to absl::Status (errors.h).
//
// Thread-safe. Run() blocks while all connections are borrowed.
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "pqxx/connection"

namespace mmi::store::postgres {

struct ConnectionPoolSettings {
  std::string dsn;  // libpq connection string or URI (never logged: it may hold a password)
  int size = 4;     // connections at most
};

class ConnectionPool {
 public:
  explicit ConnectionPool(ConnectionPoolSettings settings);
  ~ConnectionPool();
  ConnectionPool(const ConnectionPool&) = delete;
  ConnectionPool& operator=(const ConnectionPool&) = delete;

  // Runs `fn` with a connected connection. `what` names the operation in error messages.
  absl::Status Run(const std::string& what, const std::function<void(pqxx::connection&)>& fn);

 private:
  ConnectionPoolSettings settings_;
  std::mutex mu_;
  std::condition_variable available_;
  std::vector<std::unique_ptr<pqxx::connection>> idle_;  // guarded by mu_
  int borrowed_ = 0;                                     // guarded by mu_
};

}  // namespace mmi::store::postgres
