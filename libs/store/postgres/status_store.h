// StatusStore on PostgreSQL: reads dispatched_resources (migrations/0001), owns resource_status
// (migrations/0002).
#pragma once

#include "libs/store/postgres/connection_pool.h"
#include "libs/store/status_store.h"

namespace mmi::store::postgres {

class PostgresStatusStore final : public StatusStore {
 public:
  // `pool` is borrowed and must outlive the store.
  explicit PostgresStatusStore(ConnectionPool& pool) : pool_(pool) {}

  absl::StatusOr<std::vector<HubAppRef>> LookupHubApps(
      const std::vector<std::string>& resource_ids) override;
  absl::Status ForEachAppliedStatus(const std::function<void(const AppliedStatus&)>& fn) override;
  absl::Status SaveAppliedStatuses(const std::vector<AppliedStatus>& statuses) override;
  absl::Status ForEachResyncEntry(const std::function<void(const ResyncEntry&)>& fn) override;
  absl::StatusOr<bool> MarkDeletionConfirmed(const std::string& resource_id) override;
  absl::StatusOr<std::vector<AppSetCount>> AppSetCounts() override;

 private:
  ConnectionPool& pool_;
};

}  // namespace mmi::store::postgres
