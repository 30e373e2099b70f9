#include "libs/store/testing/fake_dispatch_store.h"

#include "libs/store/testing/dispatch_store_contract.h"

namespace mmi::store::testing {
namespace {

INSTANTIATE_TEST_SUITE_P(Fake, DispatchStoreContract,
                         ::testing::Values(DispatchStoreFactory{
                             "Fake", [] { return std::make_unique<FakeDispatchStore>(); },
                             [](DispatchStore& store, const std::string& id,
                                std::optional<int32_t> acked,
                                std::chrono::system_clock::time_point at) {
                               dynamic_cast<FakeDispatchStore&>(store).SetAckForTest(id, acked, at);
                             }}),
                         [](const auto& info) { return info.param.name; });

TEST(FakeDispatchStoreTest, InjectedFaultsFailEveryCall) {
  FakeDispatchStore store;
  store.FailWithForTest(absl::UnavailableError("db down"));
  EXPECT_EQ(store.Record({}).status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(store.PendingOutbox(0, 1).status().code(), absl::StatusCode::kUnavailable);
  store.FailWithForTest(absl::OkStatus());
  EXPECT_TRUE(store.PendingOutbox(0, 1).ok());
}

TEST(FakeDispatchStoreTest, RecordsTheNotificationOfEachConfirmedDeletion) {
  FakeDispatchStore store;
  DispatchChange deleting;
  deleting.resource.resource_id = "00000000-0000-5000-8000-000000000001";
  deleting.resource.cluster = "c1";
  deleting.resource.deletion_state = DeletionState::kDeleteRequested;
  deleting.event.resource_id = deleting.resource.resource_id;
  deleting.event.cluster = "c1";
  deleting.event.action = OutboxAction::kDelete;
  ASSERT_TRUE(store.Record({deleting}).ok());
  ASSERT_TRUE(store.MarkDeletionConfirmed("00000000-0000-5000-8000-000000000001").ok());
  ASSERT_TRUE(store.MarkDeletionConfirmed("00000000-0000-5000-8000-000000000002").ok());  // unknown
  EXPECT_EQ(store.notifications(),
            std::vector<std::string>{"00000000-0000-5000-8000-000000000001"});
  store.FailWithForTest(absl::UnavailableError("db down"));
  EXPECT_EQ(store.ConfirmedDeletions().status().code(), absl::StatusCode::kUnavailable);
}

TEST(FakeDispatchStoreTest, NotifiesEveryManifestRenderWrite) {
  FakeDispatchStore store;
  DispatchChange bundle;
  bundle.resource.resource_id = "00000000-0000-5000-8000-000000000003";
  bundle.resource.cluster = "c1";
  bundle.event.resource_id = bundle.resource.resource_id;
  bundle.event.cluster = "c1";
  bundle.manifest_render = ManifestRender{.resource_id = bundle.resource.resource_id,
                                          .revision = "sha-1",
                                          .source_type = "",
                                          .render_error = std::nullopt};
  DispatchChange app = bundle;
  app.resource.resource_id = app.event.resource_id = "00000000-0000-5000-8000-000000000004";
  app.manifest_render.reset();
  ASSERT_TRUE(store.Record({bundle, app}).ok());
  ASSERT_TRUE(store
                  .PutManifestRender({.resource_id = bundle.resource.resource_id,
                                      .revision = "sha-1",
                                      .source_type = "",
                                      .render_error = "broken"})
                  .ok());
  EXPECT_EQ(store.manifest_render_notifications(),
            (std::vector<std::string>{bundle.resource.resource_id, bundle.resource.resource_id}));
}

}  // namespace
}  // namespace mmi::store::testing
