// A bounded pool of libpqxx connections. Each Run() borrows one connection for the duration of
// `fn` (a libpqxx connection is used by one thread at a time), reconnecting lazily after a broken
// connection. Exceptions thrown by `fn` are mapped to absl::Status (errors.h).
//
// Thread-safe. Run() blocks while all connections are borrowed.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
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
  absl::Mutex mu_;
  std::vector<std::unique_ptr<pqxx::connection>> idle_ ABSL_GUARDED_BY(mu_);
  int borrowed_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace mmi::store::postgres
