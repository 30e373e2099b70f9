#include "libs/common/log_summary.h"

#include <utility>

namespace mmi::log {

WarnSummary::WarnSummary(const Logger& logger, std::string message, const Clock& clock,
                         std::chrono::milliseconds interval)
    : logger_(logger), message_(std::move(message)), clock_(clock), interval_(interval) {}

WarnSummary::~WarnSummary() {
  std::pair<uint64_t, std::string> due;
  {
    absl::MutexLock lock(&mu_);
    due = TakeDue(clock_.MonotonicNow(), /*whatever_the_interval=*/true);
  }
  if (due.first > 0) {
    LogSummary(due.first, due.second);
  }
}

void WarnSummary::Add(std::string_view sample, Fields fields) {
  const auto now = clock_.MonotonicNow();
  bool log_now = false;
  std::pair<uint64_t, std::string> due;
  {
    absl::MutexLock lock(&mu_);
    ++total_;
    due = TakeDue(now);
    if (!logged_once_ || now - last_line_at_ >= interval_) {
      // Quiet for an interval (any summary just taken covers earlier occurrences).
      log_now = true;
      logged_once_ = true;
      last_line_at_ = now;
    } else {
      ++unlogged_;
      last_sample_ = std::string(sample);
    }
  }
  if (due.first > 0) {
    LogSummary(due.first, due.second);
  }
  if (log_now) {
    logger_.Warn(message_, fields);
  }
}

void WarnSummary::Flush() {
  std::pair<uint64_t, std::string> due;
  {
    absl::MutexLock lock(&mu_);
    due = TakeDue(clock_.MonotonicNow());
  }
  if (due.first > 0) {
    LogSummary(due.first, due.second);
  }
}

uint64_t WarnSummary::total() const {
  absl::MutexLock lock(&mu_);
  return total_;
}

std::pair<uint64_t, std::string> WarnSummary::TakeDue(std::chrono::steady_clock::time_point now,
                                                      bool whatever_the_interval) {
  if (unlogged_ == 0 || (!whatever_the_interval && now - last_line_at_ < interval_)) {
    return {0, {}};
  }
  std::pair<uint64_t, std::string> due{unlogged_, std::move(last_sample_)};
  unlogged_ = 0;
  last_sample_.clear();
  last_line_at_ = now;
  return due;
}

void WarnSummary::LogSummary(uint64_t count, const std::string& sample) const {
  logger_.Warn(message_, {{"summary", true},
                          {"occurrences", count},
                          {"interval_s", static_cast<int64_t>(interval_.count() / 1000)},
                          {"sample", sample}});
}

}  // namespace mmi::log
