// In-memory StatusStore for unit tests: same contract as PostgresStatusStore (both pass
// libs/store/testing/status_store_contract.h), plus seeding of dispatched resources, call
// counters and fault injection.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "libs/store/status_store.h"
#include "libs/store/testing/fake_locked_store.h"

namespace mmi::store::testing {

// Thread-safe.
class FakeStatusStore final : public StatusStore, public FakeLockedStore {
 public:
  absl::StatusOr<std::vector<HubAppRef>> LookupHubApps(
      const std::vector<std::string>& resource_ids) override;
  absl::StatusOr<std::vector<DispatchedPayload>> LookupPayloads(
      const std::vector<std::string>& resource_ids) override;
  absl::Status ForEachStaleManifestRender(
      const std::function<void(const std::string& resource_id, const std::string& cluster)>& fn)
      override;
  absl::Status ForEachAppliedStatus(const std::function<void(const AppliedStatus&)>& fn) override;
  absl::Status SaveAppliedStatuses(const std::vector<AppliedStatus>& statuses) override;
  absl::Status ForEachResyncEntry(const std::function<void(const ResyncEntry&)>& fn) override;
  absl::StatusOr<bool> MarkDeletionConfirmed(const std::string& resource_id) override;
  absl::StatusOr<std::vector<AppSetCount>> AppSetCounts() override;

  // A dispatched resource, as the dispatcher would have recorded it.
  void AddResourceForTest(const HubAppRef& ref);
  // The same with its dispatched payload; a `ref.manifest` writes its manifest_renders row too
  // (a later render than every applied status saved so far, as the dispatcher's would be).
  void AddResourceForTest(const HubAppRef& ref, const std::string& payload);
  // The stored applied status of one resource, if any.
  std::optional<AppliedStatus> AppliedForTest(const std::string& resource_id) const;
  std::optional<DeletionState> DeletionStateForTest(const std::string& resource_id) const;
  // FailWithForTest() and notifications() (of mmi_deletion_confirmed): see FakeLockedStore.
  int save_calls() const;
  int lookup_calls() const;

 private:
  std::map<std::string, HubAppRef> resources_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, AppliedStatus> applied_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::string> payloads_ ABSL_GUARDED_BY(mu_);
  // The order of render and applied-status writes (updated_at and applied_at in PostgreSQL).
  int64_t writes_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, int64_t> rendered_at_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int64_t> applied_at_ ABSL_GUARDED_BY(mu_);
  int save_calls_ ABSL_GUARDED_BY(mu_) = 0;
  int lookup_calls_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace mmi::store::testing
