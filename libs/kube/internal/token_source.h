// The bearer token to send: a fixed string, or the content of a file that rotates (projected
// service-account tokens), re-read at most once per refresh period and on demand after a 401.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "libs/common/clock.h"

namespace mmi::kube::internal {

// Thread-safe.
class TokenSource {
 public:
  TokenSource(std::string static_token, std::string token_file, const Clock& clock,
              std::chrono::seconds refresh_period);

  // The current token; "" when none is configured. When the file cannot be read the last good
  // token is kept; kUnauthenticated when there never was one.
  absl::StatusOr<std::string> Token();
  // Forces the next Token() to re-read the file (after a 401). Returns whether a file is used.
  bool Invalidate();

 private:
  const std::string static_token_;
  const std::string token_file_;
  const Clock& clock_;
  const std::chrono::seconds refresh_period_;
  absl::Mutex mu_;
  std::string cached_ ABSL_GUARDED_BY(mu_);
  std::optional<std::chrono::steady_clock::time_point> read_at_ ABSL_GUARDED_BY(mu_);
};

}  // namespace mmi::kube::internal
