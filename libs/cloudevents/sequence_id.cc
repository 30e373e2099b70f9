#include "libs/cloudevents/sequence_id.h"

#include <cassert>
#include <charconv>
#include <string>

#include "absl/strings/str_cat.h"
#include "libs/cloudevents/internal/json.h"

namespace mmi::cloudevents {
namespace {

constexpr std::int64_t kMaxMillis = (std::int64_t{1} << 41) - 1;
constexpr std::int64_t kMaxNode = (std::int64_t{1} << 10) - 1;
constexpr std::int64_t kMaxStep = (std::int64_t{1} << 12) - 1;

}  // namespace

absl::StatusOr<SequenceId> SequenceId::Parse(std::string_view text) {
  std::int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < 0 ||
      text.front() == '-') {
    return absl::InvalidArgumentError(absl::StrCat(
        "sequence ID must be a non-negative 63-bit decimal integer, got ", internal::Quote(text)));
  }
  SequenceId id;
  id.millis = value >> 22;
  id.node = (value >> 12) & kMaxNode;
  id.step = value & kMaxStep;
  return id;
}

absl::StatusOr<SequenceId> SequenceId::FromParts(std::int64_t millis, std::int64_t node,
                                                 std::int64_t step) {
  if (millis < 0 || millis > kMaxMillis || node < 0 || node > kMaxNode || step < 0 ||
      step > kMaxStep) {
    return absl::InvalidArgumentError(absl::StrCat("sequence ID parts out of range: millis ",
                                                   millis, ", node ", node, ", step ", step));
  }
  return SequenceId{millis, node, step};
}

absl::StatusOr<std::strong_ordering> CompareSequenceIds(const SequenceId& a, const SequenceId& b) {
  if (a.node != b.node) {
    return absl::FailedPreconditionError(absl::StrCat(
        "sequence IDs ", a.ToString(), " and ", b.ToString(), " come from different nodes (",
        a.node, ", ", b.node, ") and cannot be compared"));
  }
  if (const auto order = a.millis <=> b.millis; order != 0) {
    return order;
  }
  return a.step <=> b.step;
}

absl::StatusOr<bool> IsNewerSequenceId(std::string_view candidate, std::string_view stored) {
  auto candidate_id = SequenceId::Parse(candidate);
  if (!candidate_id.ok()) {
    return candidate_id.status();
  }
  if (stored.empty()) {
    return true;
  }
  auto stored_id = SequenceId::Parse(stored);
  if (!stored_id.ok()) {
    return stored_id.status();
  }
  auto order = CompareSequenceIds(*candidate_id, *stored_id);
  if (!order.ok()) {
    return order.status();
  }
  return *order == std::strong_ordering::greater;
}

SequenceIdGenerator::SequenceIdGenerator(const Clock& clock, std::int64_t node)
    : clock_(clock), node_(node) {
  assert(node >= 0 && node <= kMaxNode);
}

SequenceId SequenceIdGenerator::Next() {
  const auto now_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(clock_.Now().time_since_epoch())
          .count() -
      kSnowflakeEpochUnixMs;
  absl::MutexLock lock(&mutex_);
  if (now_ms > last_millis_) {
    last_millis_ = now_ms < 0 ? 0 : now_ms;
    step_ = 0;
  } else if (step_ < kMaxStep) {
    ++step_;
  } else {
    ++last_millis_;  // borrow the next millisecond rather than block
    step_ = 0;
  }
  return SequenceId{last_millis_ & kMaxMillis, node_, step_};
}

}  // namespace mmi::cloudevents
