// StatusStore on PostgreSQL: reads dispatched_resources (migrations/0001) and manifest_renders
// (migrations/0003), owns resource_status (migrations/0002).
#pragma once

#include <functional>
#include <pqxx/pqxx>

#include "libs/store/postgres/connection_pool.h"
#include "libs/store/status_store.h"

namespace mmi::store::postgres {

class PostgresStatusStore final : public StatusStore {
 public:
  // `pool` is borrowed and must outlive the store.
  explicit PostgresStatusStore(ConnectionPool& pool) : pool_(pool) {}

  absl::StatusOr<std::vector<HubAppRef>> LookupHubApps(
      const std::vector<std::string>& resource_ids) override;
  absl::StatusOr<std::vector<DispatchedPayload>> LookupPayloads(
      const std::vector<std::string>& resource_ids) override;
  absl::Status ForEachStaleManifestRender(
      const std::function<void(const std::string& resource_id, const std::string& cluster)>& fn)
      override;
  absl::Status ForEachAppliedStatus(const std::function<void(const AppliedStatus&)>& fn) override;
  absl::Status SaveAppliedStatuses(const std::vector<AppliedStatus>& statuses) override;
  absl::Status ForEachResyncEntry(const std::function<void(const ResyncEntry&)>& fn) override;
  absl::StatusOr<bool> MarkDeletionConfirmed(const std::string& resource_id) override;
  absl::StatusOr<std::vector<AppSetCount>> AppSetCounts() override;

 private:
  // Runs `select_in` (a SELECT ending in "... IN (") over the UUIDs of `resource_ids`, in
  // statements of a bounded number of ids; `of` maps each row.
  template <typename T>
  absl::StatusOr<std::vector<T>> SelectByIds(const char* what,
                                             const std::vector<std::string>& resource_ids,
                                             const std::string& select_in,
                                             T (*of)(const pqxx::row&));
  // Runs `select` (keyset-paged by resource id: `> $1::uuid ... ORDER BY` the id, no LIMIT) in
  // one transaction and calls `fn` per row.
  absl::Status ForEachPage(const char* what, const std::string& select,
                           const std::function<void(const pqxx::row&)>& fn);

  ConnectionPool& pool_;
};

}  // namespace mmi::store::postgres
