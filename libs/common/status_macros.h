// Error propagation for absl::Status / absl::StatusOr (the Abseil pinned by Debian 12 predates
// absl/status/status_macros.h).
//
//   RETURN_IF_ERROR(DoThing());
//   ASSIGN_OR_RETURN(auto value, ComputeValue());
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define MMI_STATUS_CONCAT_INNER_(a, b) a##b
#define MMI_STATUS_CONCAT_(a, b) MMI_STATUS_CONCAT_INNER_(a, b)

#define RETURN_IF_ERROR(expr)                                     \
  do {                                                            \
    ::absl::Status mmi_status_ = ::mmi::internal::AsStatus(expr); \
    if (!mmi_status_.ok()) {                                      \
      return mmi_status_;                                         \
    }                                                             \
  } while (false)

#define ASSIGN_OR_RETURN(lhs, rexpr) \
  MMI_ASSIGN_OR_RETURN_IMPL_(MMI_STATUS_CONCAT_(mmi_statusor_, __LINE__), lhs, rexpr)

#define MMI_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                               \
  if (!statusor.ok()) {                                  \
    return std::move(statusor).status();                 \
  }                                                      \
  lhs = *std::move(statusor)

namespace mmi::internal {
inline absl::Status AsStatus(absl::Status status) { return status; }
template <typename T>
absl::Status AsStatus(const absl::StatusOr<T>& status_or) {
  return status_or.status();
}
}  // namespace mmi::internal
