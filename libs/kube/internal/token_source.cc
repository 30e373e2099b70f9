#include "libs/kube/internal/token_source.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "libs/common/config.h"
#include "libs/common/log.h"
#include "libs/kube/internal/loggers.h"

namespace mmi::kube::internal {
namespace {

const log::Logger& Log() { return ClientLog(); }

}  // namespace

TokenSource::TokenSource(std::string static_token, std::string token_file, const Clock& clock,
                         std::chrono::seconds refresh_period)
    : static_token_(std::move(static_token)),
      token_file_(std::move(token_file)),
      clock_(clock),
      refresh_period_(refresh_period) {}

absl::StatusOr<std::string> TokenSource::Token() {
  if (token_file_.empty()) {
    return static_token_;
  }
  absl::MutexLock lock(&mu_);
  const auto now = clock_.MonotonicNow();
  if (read_at_.has_value() && now - *read_at_ < refresh_period_ && !cached_.empty()) {
    return cached_;
  }
  absl::StatusOr<std::string> content = config::ReadFile(token_file_);
  if (content.ok()) {
    std::string token(absl::StripAsciiWhitespace(*content));
    if (!token.empty()) {
      cached_ = std::move(token);
      read_at_ = now;
      return cached_;
    }
    content = absl::FailedPreconditionError("the file is empty");
  }
  if (!cached_.empty()) {
    Log().Warn("cannot re-read the token file; keeping the previous token",
               {{"file", token_file_}, {"error", std::string(content.status().message())}});
    read_at_ = now;  // retry after another refresh period
    return cached_;
  }
  if (!static_token_.empty()) {
    return static_token_;
  }
  return absl::UnauthenticatedError(absl::StrCat("cannot read the bearer token file ", token_file_,
                                                 ": ", std::string(content.status().message())));
}

bool TokenSource::Invalidate() {
  if (token_file_.empty()) {
    return false;
  }
  absl::MutexLock lock(&mu_);
  read_at_.reset();
  return true;
}

}  // namespace mmi::kube::internal
