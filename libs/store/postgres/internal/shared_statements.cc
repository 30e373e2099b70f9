#include "libs/store/postgres/internal/shared_statements.h"

#include "libs/store/dispatch_store.h"  // kDeletionConfirmedChannel

namespace mmi::store::postgres::internal {

void ForEachByResourceId(pqxx::transaction_base& tx, const std::string& query,
                         const std::function<void(const pqxx::row&)>& each) {
  std::string after = "00000000-0000-0000-0000-000000000000";
  while (true) {
    const pqxx::result rows = tx.exec_params(query, after);
    for (const auto& row : rows) {
      each(row);
    }
    if (rows.size() < static_cast<pqxx::result::size_type>(kResourcePageSize)) {
      return;
    }
    after = rows[rows.size() - 1][0].as<std::string>();
  }
}

bool ConfirmDeletionOfDeleting(pqxx::transaction_base& tx, const std::string& resource_id) {
  const pqxx::result updated = tx.exec_params(
      "UPDATE dispatched_resources SET deletion_state = 2, updated_at = now() "
      "WHERE resource_id = $1::uuid AND deletion_state <> 0 RETURNING 1",
      resource_id);
  return !updated.empty();
}

void NotifyDeletionConfirmed(pqxx::transaction_base& tx, const std::string& resource_id) {
  tx.exec_params("SELECT pg_notify($1, $2)", std::string(kDeletionConfirmedChannel), resource_id);
}

}  // namespace mmi::store::postgres::internal
