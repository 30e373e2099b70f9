// Maps libpqxx exceptions to absl::Status with fixed meanings (STYLE.md §4):
// broken connection / admin shutdown / too many connections -> kUnavailable (retry);
// serialization failure / deadlock -> kAborted (retry the transaction);
// unique violation -> kAlreadyExists; other integrity violations -> kFailedPrecondition;
// syntax errors / undefined objects -> kInternal (a bug in our SQL); the rest -> kUnknown.
#pragma once

#include <exception>
#include <string>

#include "absl/status/status.h"

namespace mmi::store::postgres {

// Call from a catch (...) block only (it rethrows the current exception to classify it).
// `what` names the operation ("apply migration 0002_status_state.sql").
absl::Status StatusFromCurrentException(const std::string& what);

}  // namespace mmi::store::postgres
