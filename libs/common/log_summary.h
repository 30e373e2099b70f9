// Per-event warnings that cannot flood the log. A misbehaving peer can send thousands of bad
// events a second; each is counted by its metric, but the log gets at most two lines per kind of
// warning and interval: the first occurrence after a quiet interval is logged at once with its
// detail, and the ones after it within the interval are summed up in one line (how many, and the
// id of the most recent) at the first Add() or Flush() after the interval has passed.
//
//   log::WarnSummary unknown_(logger_, "status events for resources the dispatcher does not know;
//   dropped", clock_); unknown_.Add(event.id, {{"resource", id}, {"cluster", cluster}});   // per
//   event unknown_.Flush();                                                     // from a periodic
//   tick
//
// Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "libs/common/clock.h"
#include "libs/common/log.h"

namespace mmi::log {

class WarnSummary {
 public:
  static constexpr std::chrono::milliseconds kDefaultInterval{std::chrono::seconds(30)};

  // `logger` and `clock` are borrowed and must outlive this object.
  WarnSummary(const Logger& logger, std::string message, const Clock& clock,
              std::chrono::milliseconds interval = kDefaultInterval);
  // Logs what is counted but not logged yet, whatever the interval (the last word at shutdown).
  ~WarnSummary();
  WarnSummary(const WarnSummary&) = delete;
  WarnSummary& operator=(const WarnSummary&) = delete;

  // One occurrence. `sample` names it (an event or resource id); `fields` detail it and are
  // only read when the occurrence is logged at once.
  void Add(std::string_view sample, Fields fields = {});
  // Logs the summary of occurrences not logged yet once the interval has passed.
  void Flush();

  // Occurrences so far (logged or summed up).
  uint64_t total() const;

 private:
  // Takes the summary due at `now` (or any, `whatever_the_interval`): the count and sample to
  // log (count 0 = none).
  std::pair<uint64_t, std::string> TakeDue(std::chrono::steady_clock::time_point now,
                                           bool whatever_the_interval = false)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void LogSummary(uint64_t count, const std::string& sample) const;

  const Logger& logger_;
  const std::string message_;
  const Clock& clock_;
  const std::chrono::milliseconds interval_;

  mutable absl::Mutex mu_;
  bool logged_once_ ABSL_GUARDED_BY(mu_) = false;
  std::chrono::steady_clock::time_point last_line_at_ ABSL_GUARDED_BY(mu_);
  uint64_t unlogged_ ABSL_GUARDED_BY(mu_) = 0;
  std::string last_sample_ ABSL_GUARDED_BY(mu_);
  uint64_t total_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace mmi::log
