#include "bench/dispatch/metered.h"

#include <chrono>
#include <utility>

#include "bench/common/cpu_time.h"

namespace mmi::bench {
namespace {

// Adds the calling thread's CPU time from construction to destruction to `cost`.
class Meter {
 public:
  Meter(CallCost& cost, int64_t items) : cost_(cost), start_(ThreadCpuNs()) {
    cost_.calls.fetch_add(1);
    cost_.items.fetch_add(items);
  }
  ~Meter() { cost_.cpu_ns.fetch_add(ThreadCpuNs() - start_); }
  Meter(const Meter&) = delete;
  Meter& operator=(const Meter&) = delete;

 private:
  CallCost& cost_;
  const int64_t start_;
};

}  // namespace

absl::Status MeteredStore::ForEachResource(
    const std::function<void(const store::DispatchedResource&)>& fn) {
  const auto start = std::chrono::steady_clock::now();
  absl::Status status = inner_.ForEachResource(fn);
  load_wall_ns_.fetch_add(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
          .count());
  return status;
}

absl::StatusOr<std::vector<int64_t>> MeteredStore::Record(
    const std::vector<store::DispatchChange>& changes) {
  Meter meter(record_, static_cast<int64_t>(changes.size()));
  return inner_.Record(changes);
}

absl::Status MeteredStore::MarkPublished(const std::vector<int64_t>& seqs,
                                         std::chrono::system_clock::time_point at) {
  absl::Status status;
  {
    Meter meter(mark_, static_cast<int64_t>(seqs.size()));
    status = inner_.MarkPublished(seqs, at);
  }
  if (status.ok()) {
    marked_.fetch_add(static_cast<int64_t>(seqs.size()));
  }
  return status;
}

void MeteredPublisher::Publish(cloudevents::Event event, transport::PublishCallback done) {
  Meter meter(publish_, 1);
  const int64_t awaiting = awaiting_.fetch_add(1) + 1;
  for (int64_t seen = max_awaiting_.load(); awaiting > seen;) {
    if (max_awaiting_.compare_exchange_weak(seen, awaiting)) {
      break;
    }
  }
  const auto sent = std::chrono::steady_clock::now();
  inner_.Publish(std::move(event),
                 [this, sent, done = std::move(done)](absl::Status status) mutable {
                   ack_wait_ns_.fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                              std::chrono::steady_clock::now() - sent)
                                              .count());
                   awaiting_.fetch_sub(1);
                   (status.ok() ? acknowledged_ : failed_).fetch_add(1);
                   std::move(done)(std::move(status));
                 });
}

}  // namespace mmi::bench
