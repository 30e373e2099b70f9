// The StatusStore contract against the in-memory fake.
#include "libs/store/testing/fake_status_store.h"

#include <gtest/gtest.h>

#include "libs/store/testing/status_store_contract.h"

namespace mmi::store::testing {
namespace {

StatusStoreUnderTest MakeFake() {
  auto store = std::make_unique<FakeStatusStore>();
  FakeStatusStore* raw = store.get();
  return {std::move(store), [raw](const HubAppRef& ref) { raw->AddResourceForTest(ref); },
          [raw](const HubAppRef& ref, const std::string& payload) {
            raw->AddResourceForTest(ref, payload);
          }};
}

INSTANTIATE_TEST_SUITE_P(Fake, StatusStoreContract,
                         ::testing::Values(StatusStoreFactory{"Fake", MakeFake}),
                         [](const auto& info) { return info.param.name; });

TEST(FakeStatusStoreTest, SendsOneNotificationPerConfirmedDeletion) {
  FakeStatusStore store;
  HubAppRef deleting;
  deleting.resource_id = "00000000-0000-5000-8000-000000000001";
  deleting.cluster = "c1";
  deleting.deletion_state = DeletionState::kDeleteRequested;
  store.AddResourceForTest(deleting);
  HubAppRef live = deleting;
  live.resource_id = "00000000-0000-5000-8000-000000000002";
  live.deletion_state = DeletionState::kLive;
  store.AddResourceForTest(live);
  ASSERT_TRUE(store.MarkDeletionConfirmed("00000000-0000-5000-8000-000000000001").ok());
  ASSERT_TRUE(store.MarkDeletionConfirmed("00000000-0000-5000-8000-000000000002").ok());
  EXPECT_EQ(store.notifications(),
            std::vector<std::string>{"00000000-0000-5000-8000-000000000001"});
}

TEST(FakeStatusStoreTest, InjectedFaultsFailEveryCall) {
  FakeStatusStore store;
  store.FailWithForTest(absl::UnavailableError("db down"));
  EXPECT_EQ(store.SaveAppliedStatuses({}).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(store.LookupHubApps({"x"}).status().code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace mmi::store::testing
