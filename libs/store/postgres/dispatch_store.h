// DispatchStore on PostgreSQL (tables of migrations/0001_dispatch_state.sql).
#pragma once

#include <utility>

#include "libs/store/dispatch_store.h"
#include "libs/store/postgres/connection_pool.h"

namespace mmi::store::postgres {

class PostgresDispatchStore final : public DispatchStore {
 public:
  // `pool` is borrowed and must outlive the store. `observer` (may be empty) is told of every
  // call that reached the database.
  explicit PostgresDispatchStore(ConnectionPool& pool, StoreCallObserver observer = {})
      : pool_(pool), observer_(std::move(observer)) {}

  absl::Status ForEachResource(const std::function<void(const DispatchedResource&)>& fn) override;
  absl::StatusOr<bool> HasResources() override;
  absl::StatusOr<std::optional<DispatchedResource>> GetResource(
      const std::string& resource_id) override;
  absl::StatusOr<ApplicationRows> LoadApplications(
      const std::vector<HubKey>& keys, const std::vector<std::string>& resource_ids) override;
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
  absl::Status PutManifestRender(const ManifestRender& render) override;
  absl::StatusOr<std::optional<ManifestRender>> GetManifestRender(
      const std::string& resource_id) override;
  absl::StatusOr<AckSnapshot> UnacknowledgedResources(const AckWindow& window) override;
  absl::StatusOr<std::vector<AcknowledgedHandover>> AcknowledgedHandovers(int limit) override;

 private:
  // pool_.Run, timed for the observer under the metric label `operation`.
  absl::Status Run(std::string_view operation, const std::string& what,
                   const std::function<void(pqxx::connection&)>& fn);

  ConnectionPool& pool_;
  const StoreCallObserver observer_;
};

}  // namespace mmi::store::postgres
