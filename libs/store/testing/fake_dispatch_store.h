// In-memory DispatchStore for unit tests: same contract as PostgresDispatchStore (both pass
// libs/store/testing/dispatch_store_contract.h), plus call counters and fault injection.
#pragma once

#include <map>
#include <memory>
#include <optional>

#include "libs/store/dispatch_store.h"
#include "libs/store/testing/fake_locked_store.h"

namespace mmi::store::testing {

class FakeDispatchStore final : public DispatchStore, public FakeLockedStore {
 public:
  absl::Status ForEachResource(const std::function<void(const DispatchedResource&)>& fn) override;
  absl::StatusOr<bool> HasResources() override;
  absl::StatusOr<std::optional<DispatchedResource>> GetResource(
      const std::string& resource_id) override;
  absl::StatusOr<ApplicationRows> LoadApplications(
      const std::vector<HubKey>& keys, const std::vector<std::string>& resource_ids) override;
  absl::StatusOr<std::vector<DispatchedResource>> ResourcesOfCluster(
      const std::string& cluster) override;
  absl::StatusOr<std::vector<int64_t>> Record(const std::vector<DispatchChange>& changes) override;
  absl::StatusOr<std::vector<OutboxEntry>> PendingOutbox(int64_t after_seq, int limit) override;
  absl::Status MarkPublished(const std::vector<int64_t>& seqs,
                             std::chrono::system_clock::time_point at) override;
  absl::Status RecordPublishFailure(int64_t seq, const std::string& error) override;
  absl::StatusOr<bool> MarkDeletionConfirmed(const std::string& resource_id) override;
  absl::StatusOr<std::vector<std::string>> ConfirmedDeletions() override;
  absl::Status Forget(const std::string& resource_id) override;
  absl::Status PutManifestRender(const ManifestRender& render) override;
  absl::StatusOr<std::optional<ManifestRender>> GetManifestRender(
      const std::string& resource_id) override;
  absl::StatusOr<AckSnapshot> UnacknowledgedResources(const AckWindow& window) override;
  absl::StatusOr<std::vector<AcknowledgedHandover>> AcknowledgedHandovers(int limit) override;

  // FailWithForTest() and notifications() (of kDeletionConfirmedChannel): see FakeLockedStore.
  // While held, ForEachResource() fails with kUnavailable: a warm load that has not finished.
  // Once released, the next ForEachResource() and the PendingOutbox() pages after it (until a
  // short page) return the rows and outbox as they were when the hold began, as a real load
  // does whose pages were read before the changes made meanwhile.
  void HoldWarmLoadForTest(bool hold);
  // What the sink would have saved in `resource_status` for a resource: the version its agent
  // reported applied (nullopt: a report without one) and when.
  void SetAckForTest(const std::string& resource_id, std::optional<int32_t> acked_version,
                     std::chrono::system_clock::time_point reported_at);
  int record_calls() const;
  int mark_published_calls() const;
  // Payloads of the kManifestRenderChannel notifications sent, in order.
  std::vector<std::string> manifest_render_notifications() const;

 private:
  std::map<std::string, DispatchedResource> resources_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, OutboxEntry> outbox_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, ManifestRender> renders_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> render_notifications_ ABSL_GUARDED_BY(mu_);
  int64_t next_seq_ ABSL_GUARDED_BY(mu_) = 1;
  int record_calls_ ABSL_GUARDED_BY(mu_) = 0;
  bool hold_warm_load_ ABSL_GUARDED_BY(mu_) = false;
  struct LoadSnapshot {
    std::map<std::string, DispatchedResource> resources;
    std::map<int64_t, OutboxEntry> outbox;
  };
  std::unique_ptr<LoadSnapshot> load_snapshot_ ABSL_GUARDED_BY(mu_);
  std::optional<std::map<int64_t, OutboxEntry>> stale_outbox_ ABSL_GUARDED_BY(mu_);
  int mark_published_calls_ ABSL_GUARDED_BY(mu_) = 0;
  struct Ack {
    std::optional<int32_t> version;
    std::chrono::system_clock::time_point reported_at;
  };
  std::map<std::string, Ack> acks_ ABSL_GUARDED_BY(mu_);
};

}  // namespace mmi::store::testing
