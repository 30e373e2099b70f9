// A DispatchStore decorator that records mmi_store_query_duration_seconds{operation} and
// mmi_store_errors_total{operation} around every call of the wrapped store. Same contract and
// thread safety as the wrapped store.
#pragma once

#include "libs/common/clock.h"
#include "libs/store/dispatch_store.h"
#include "services/dispatcher/apps/metrics.h"

namespace mmi::dispatcher {

class TimedDispatchStore final : public store::DispatchStore {
 public:
  // Everything borrowed; must outlive this object.
  TimedDispatchStore(store::DispatchStore& inner, const Clock& clock, DispatcherMetrics& metrics)
      : inner_(inner), clock_(clock), metrics_(metrics) {}

  absl::Status ForEachResource(
      const std::function<void(const store::DispatchedResource&)>& fn) override;
  absl::StatusOr<std::optional<store::DispatchedResource>> GetResource(
      const std::string& resource_id) override;
  absl::StatusOr<std::vector<store::DispatchedResource>> ResourcesOfCluster(
      const std::string& cluster) override;
  absl::StatusOr<std::vector<int64_t>> Record(
      const std::vector<store::DispatchChange>& changes) override;
  absl::StatusOr<std::vector<store::OutboxEntry>> PendingOutbox(int64_t after_seq,
                                                                int limit) override;
  absl::Status MarkPublished(const std::vector<int64_t>& seqs,
                             std::chrono::system_clock::time_point at) override;
  absl::Status RecordPublishFailure(int64_t seq, const std::string& error) override;
  absl::StatusOr<bool> MarkDeletionConfirmed(const std::string& resource_id) override;
  absl::StatusOr<std::vector<std::string>> ConfirmedDeletions() override;
  absl::Status Forget(const std::string& resource_id) override;

 private:
  template <typename Fn>
  auto Timed(std::string_view operation, Fn&& fn);

  store::DispatchStore& inner_;
  const Clock& clock_;
  DispatcherMetrics& metrics_;
};

}  // namespace mmi::dispatcher
