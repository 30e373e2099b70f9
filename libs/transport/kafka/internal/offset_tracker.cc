#include "libs/transport/kafka/internal/offset_tracker.h"

namespace mmi::transport::internal {

void OffsetTracker::Assign(int32_t partition) {
  absl::MutexLock lock(&mu_);
  PartitionState& state = partitions_[partition];
  state = PartitionState{};
  state.generation = next_generation_++;
}

void OffsetTracker::Revoke(int32_t partition) {
  absl::MutexLock lock(&mu_);
  partitions_.erase(partition);
}

void OffsetTracker::Close() {
  absl::MutexLock lock(&mu_);
  closed_ = true;
}

OffsetTracker::Delivery OffsetTracker::Delivered(int32_t partition, int64_t offset) {
  absl::MutexLock lock(&mu_);
  auto it = partitions_.find(partition);
  if (it == partitions_.end()) {
    // A message for a partition we were never told about (no rebalance callback yet): track it
    // under a fresh generation.
    it = partitions_.emplace(partition, PartitionState{}).first;
    it->second.generation = next_generation_++;
  }
  it->second.delivered[offset] = false;
  return Delivery{partition, offset, it->second.generation};
}

void OffsetTracker::Ack(const Delivery& delivery) {
  absl::MutexLock lock(&mu_);
  if (closed_) {
    return;
  }
  auto it = partitions_.find(delivery.partition);
  if (it == partitions_.end() || it->second.generation != delivery.generation) {
    return;
  }
  PartitionState& state = it->second;
  auto entry = state.delivered.find(delivery.offset);
  if (entry == state.delivered.end()) {
    return;
  }
  entry->second = true;
  while (!state.delivered.empty() && state.delivered.begin()->second) {
    state.committable = state.delivered.begin()->first + 1;
    state.advanced = true;
    state.delivered.erase(state.delivered.begin());
  }
}

std::vector<std::pair<int32_t, int64_t>> OffsetTracker::TakeCommittable() {
  absl::MutexLock lock(&mu_);
  std::vector<std::pair<int32_t, int64_t>> out;
  for (auto& [partition, state] : partitions_) {
    if (state.advanced) {
      out.emplace_back(partition, state.committable);
      state.advanced = false;
    }
  }
  return out;
}

int OffsetTracker::pending() const {
  absl::MutexLock lock(&mu_);
  int n = 0;
  for (const auto& [partition, state] : partitions_) {
    for (const auto& [offset, acked] : state.delivered) {
      n += acked ? 0 : 1;
    }
  }
  return n;
}

}  // namespace mmi::transport::internal
