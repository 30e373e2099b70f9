#include "libs/store/postgres/connection_pool.h"

#include <pqxx/pqxx>

#include "libs/store/postgres/errors.h"

namespace mmi::store::postgres {

ConnectionPool::ConnectionPool(ConnectionPoolSettings settings) : settings_(std::move(settings)) {}

ConnectionPool::~ConnectionPool() = default;

absl::Status ConnectionPool::Run(const std::string& what,
                                 const std::function<void(pqxx::connection&)>& fn) {
  std::unique_ptr<pqxx::connection> conn;
  {
    absl::MutexLock lock(&mu_);
    const auto available = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return !idle_.empty() || borrowed_ + static_cast<int>(idle_.size()) < settings_.size;
    };
    mu_.Await(absl::Condition(&available));
    if (!idle_.empty()) {
      conn = std::move(idle_.back());
      idle_.pop_back();
    }
    ++borrowed_;
  }
  absl::Status status;
  try {
    if (!conn || !conn->is_open()) {
      conn = std::make_unique<pqxx::connection>(settings_.dsn);
    }
    fn(*conn);
  } catch (...) {
    status = StatusFromCurrentException(what);
  }
  {
    absl::MutexLock lock(&mu_);
    --borrowed_;
    // A connection that failed may be broken: drop it, the next Run() reconnects.
    if (status.ok() && conn && conn->is_open()) {
      idle_.push_back(std::move(conn));
    }
  }
  return status;
}

}  // namespace mmi::store::postgres
