// Status sequence IDs (../shared/spec/maestro-protocol.md §6.2): Twitter-style snowflakes, written
// as decimal strings in the `sequenceid` extension.
//
//   id = (ms since 2010-11-04T01:42:54.657Z) << 22 | node << 12 | step
//
// A source keeps the last ID per resource and drops status events that are not newer
// (IsNewerSequenceId). Thread-safe: the free functions are pure; SequenceIdGenerator locks.
#pragma once

#include <chrono>
#include <compare>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "libs/common/clock.h"

namespace mmi::cloudevents {

// Unix milliseconds of the snowflake epoch (2010-11-04T01:42:54.657Z).
inline constexpr std::int64_t kSnowflakeEpochUnixMs = 1288834974657;

struct SequenceId {
  std::int64_t millis = 0;  // since the snowflake epoch, 41 bits
  std::int64_t node = 0;    // 10 bits
  std::int64_t step = 0;    // 12 bits

  // Parses the decimal form. kInvalidArgument unless it is a non-negative 63-bit decimal integer.
  static absl::StatusOr<SequenceId> Parse(std::string_view text);
  // kInvalidArgument when a field is out of range.
  static absl::StatusOr<SequenceId> FromParts(std::int64_t millis, std::int64_t node,
                                              std::int64_t step);
  std::int64_t Value() const { return (millis << 22) | (node << 12) | step; }
  std::string ToString() const { return std::to_string(Value()); }
  std::chrono::sys_time<std::chrono::milliseconds> Time() const {
    return std::chrono::sys_time<std::chrono::milliseconds>(
        std::chrono::milliseconds(millis + kSnowflakeEpochUnixMs));
  }
  friend bool operator==(const SequenceId&, const SequenceId&) = default;
};

// Orders two IDs of the same node by (time, step). kFailedPrecondition when the nodes differ:
// such IDs are not comparable.
absl::StatusOr<std::strong_ordering> CompareSequenceIds(const SequenceId& a, const SequenceId& b);

// Maestro's rule: true if `stored` is empty or `candidate` is strictly newer; false if it is older
// or equal. kInvalidArgument when either is malformed, kFailedPrecondition when the nodes differ.
absl::StatusOr<bool> IsNewerSequenceId(std::string_view candidate, std::string_view stored);

// Generates strictly increasing IDs for one node. When more than 4096 IDs are requested within
// one millisecond, or the clock steps back, it borrows the next millisecond instead of waiting,
// so Next() never blocks. Thread-safe. The clock is borrowed and must outlive the generator.
class SequenceIdGenerator {
 public:
  explicit SequenceIdGenerator(const Clock& clock, std::int64_t node = 1);
  SequenceId Next();

 private:
  const Clock& clock_;
  const std::int64_t node_;
  absl::Mutex mutex_;
  std::int64_t last_millis_ ABSL_GUARDED_BY(mutex_) = -1;
  std::int64_t step_ ABSL_GUARDED_BY(mutex_) = 0;
};

}  // namespace mmi::cloudevents
