// DispatchStore on PostgreSQL (tables of migrations/0001_dispatch_state.sql).
#pragma once

#include "libs/store/dispatch_store.h"
#include "libs/store/postgres/connection_pool.h"

namespace mmi::store::postgres {

class PostgresDispatchStore final : public DispatchStore {
 public:
  // `pool` is borrowed and must outlive the store.
  explicit PostgresDispatchStore(ConnectionPool& pool) : pool_(pool) {}

  absl::Status ForEachResource(const std::function<void(const DispatchedResource&)>& fn) override;
  absl::StatusOr<std::optional<DispatchedResource>> GetResource(
      const std::string& resource_id) override;
  absl::StatusOr<std::vector<DispatchedResource>> ResourcesOfCluster(
      const std::string& cluster) override;
  absl::StatusOr<std::vector<int64_t>> Record(const std::vector<DispatchChange>& changes) override;
  absl::StatusOr<std::vector<OutboxEntry>> PendingOutbox(int64_t after_seq, int limit) override;
  absl::Status MarkPublished(const std::vector<int64_t>& seqs,
                             std::chrono::system_clock::time_point at) override;
  absl::Status RecordPublishFailure(int64_t seq, const std::string& error) override;
  absl::StatusOr<bool> MarkDeletionConfirmed(const std::string& resource_id) override;
  absl::StatusOr<std::vector<std::string>> ConfirmedDeletions() override;
  absl::Status Forget(const std::string& resource_id) override;

 private:
  ConnectionPool& pool_;
};

}  // namespace mmi::store::postgres
