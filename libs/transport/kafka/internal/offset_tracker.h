// At-least-once bookkeeping for a Kafka consumer: which delivered offsets were acknowledged and
// how far each partition may be committed. Pure logic.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace mmi::transport::internal {

// Thread-safe: Delivered/Assign/Revoke/TakeCommittable run on the consumer thread, Ack on any.
// Within a partition the committable offset is one past the longest prefix of delivered offsets
// that are all acknowledged, so an unacknowledged event is never skipped by a commit.
class OffsetTracker {
 public:
  // Identifies one delivery: acks from before a revoke/re-assign are ignored.
  struct Delivery {
    int32_t partition = 0;
    int64_t offset = 0;
    uint64_t generation = 0;
  };

  // The partition is now ours; forgets any previous state for it.
  void Assign(int32_t partition);
  // The partition is no longer ours: pending acks for it become no-ops.
  void Revoke(int32_t partition);
  // After Close() every ack is ignored (the subscriber stopped).
  void Close();

  // Records that the message at `offset` went to the handler.
  Delivery Delivered(int32_t partition, int64_t offset);
  void Ack(const Delivery& delivery);

  // (partition, next offset to consume) for every partition whose committable offset advanced
  // since the last call.
  std::vector<std::pair<int32_t, int64_t>> TakeCommittable();

  // Delivered but not yet acknowledged, over all partitions.
  int pending() const;

 private:
  struct PartitionState {
    uint64_t generation = 0;
    std::map<int64_t, bool> delivered;  // offset -> acked
    int64_t committable = -1;           // next offset to consume; -1 = nothing yet
    bool advanced = false;
  };

  mutable absl::Mutex mu_;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t next_generation_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<int32_t, PartitionState> partitions_ ABSL_GUARDED_BY(mu_);
};

}  // namespace mmi::transport::internal
