// Statements that both PostgreSQL stores run on the tables they share (dispatched_resources):
// paging through rows by resource ID, and confirming a deletion.
#pragma once

#include <functional>
#include <pqxx/pqxx>
#include <string>

namespace mmi::store::postgres::internal {

// Rows per page of ForEachByResourceId.
inline constexpr int kResourcePageSize = 5000;

// Runs `query` page after page and calls `each` on every row: keyset pagination keeps memory
// bounded at 300K rows. `query` takes the last resource ID seen as $1 (text, starting below every
// UUID), returns the resource ID as text in column 0, and ends in
// `ORDER BY <resource_id> LIMIT kResourcePageSize`.
void ForEachByResourceId(pqxx::transaction_base& tx, const std::string& query,
                         const std::function<void(const pqxx::row&)>& each);

// Marks `resource_id` (a UUID) deletion-confirmed when it is being deleted, and returns whether
// it was: a late or redelivered Deleted report for a live (re-created) resource must not end it.
bool ConfirmDeletionOfDeleting(pqxx::transaction_base& tx, const std::string& resource_id);

// Tells kDeletionConfirmedChannel's listeners (delivered only when `tx` commits).
void NotifyDeletionConfirmed(pqxx::transaction_base& tx, const std::string& resource_id);

}  // namespace mmi::store::postgres::internal
