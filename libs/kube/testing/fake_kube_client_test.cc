#include "libs/kube/testing/fake_kube_client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "libs/kube/errors.h"

namespace mmi::kube::testing {
namespace {

using nlohmann::json;

ResourceRef Apps() { return {"argoproj.io", "v1alpha1", "applications", "argocd"}; }

json App(const std::string& name) {
  return {{"metadata", {{"name", name}}}, {"spec", {{"project", "default"}}}};
}

TEST(FakeKubeClientTest, AssignsServerFieldsAndChecksResourceVersions) {
  FakeKubeClient fake;
  auto created = fake.Create(Apps(), App("a"), {});
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ((*created)["metadata"]["namespace"], "argocd");
  EXPECT_EQ((*created)["metadata"]["resourceVersion"], "101");
  EXPECT_EQ((*created)["metadata"]["generation"], 1);
  EXPECT_FALSE((*created)["metadata"]["uid"].get<std::string>().empty());
  EXPECT_EQ(fake.Create(Apps(), App("a"), {}).status().code(), absl::StatusCode::kAlreadyExists);

  json stale = *created;
  json fresh = *created;
  fresh["spec"]["project"] = "p2";
  auto updated = fake.Update(Apps(), fresh, {});
  ASSERT_TRUE(updated.ok());
  EXPECT_EQ((*updated)["metadata"]["generation"], 2);
  stale["spec"]["project"] = "p3";
  const auto conflict = fake.Update(Apps(), stale, {});
  EXPECT_TRUE(IsConflict(conflict.status())) << conflict.status();
  stale["metadata"].erase("resourceVersion");
  EXPECT_EQ(fake.Update(Apps(), stale, {}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(FakeKubeClientTest, AppliesMergeAndJsonPatches) {
  FakeKubeClient fake;
  ASSERT_TRUE(fake.Create(Apps(), App("a"), {}).ok());
  auto merged =
      fake.Patch(Apps(), "a", PatchType::kMerge, {{"status", {{"health", "Healthy"}}}}, {}, "");
  ASSERT_TRUE(merged.ok());
  EXPECT_EQ((*merged)["status"]["health"], "Healthy");
  const json guarded =
      json::array({{{"op", "test"}, {"path", "/metadata/resourceVersion"}, {"value", "1"}},
                   {{"op", "replace"}, {"path", "/spec/project"}, {"value", "x"}}});
  EXPECT_EQ(fake.Patch(Apps(), "a", PatchType::kJson, guarded, {}, "").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      fake.Patch(Apps(), "missing", PatchType::kMerge, json::object(), {}, "").status().code(),
      absl::StatusCode::kNotFound);
  PatchOptions apply;
  apply.field_manager = "m";
  auto applied = fake.Patch(Apps(), "b", PatchType::kApply, App("b"), apply, "");
  ASSERT_TRUE(applied.ok()) << applied.status();
  EXPECT_EQ(fake.ObjectCount(Apps()), 2u);
}

TEST(FakeKubeClientTest, DeletesHonourPreconditionsAndFinalizers) {
  FakeKubeClient fake;
  json app = App("a");
  app["metadata"]["finalizers"] = {"resources-finalizer.argocd.argoproj.io"};
  auto created = fake.Create(Apps(), app, {});
  ASSERT_TRUE(created.ok());
  DeleteOptions wrong_uid;
  wrong_uid.precondition_uid = "other";
  EXPECT_TRUE(IsConflict(fake.Delete(Apps(), "a", wrong_uid)));
  ASSERT_TRUE(fake.Delete(Apps(), "a", {}).ok());
  auto terminating = fake.Get(Apps(), "a");
  ASSERT_TRUE(terminating.ok());
  EXPECT_TRUE((*terminating)["metadata"].contains("deletionTimestamp"));
  (*terminating)["metadata"]["finalizers"] = json::array();
  ASSERT_TRUE(fake.Update(Apps(), *terminating, {}).ok());
  EXPECT_EQ(fake.Get(Apps(), "a").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(fake.Delete(Apps(), "a", {}).code(), absl::StatusCode::kNotFound);
}

TEST(FakeKubeClientTest, PagesListsAndExpiresContinueTokensOnCompaction) {
  FakeKubeClient fake;
  for (const char* name : {"a", "b", "c"}) {
    ASSERT_TRUE(fake.Create(Apps(), App(name), {}).ok());
  }
  ListOptions two;
  two.limit = 2;
  auto page = fake.List(Apps(), two);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->items.size(), 2u);
  ASSERT_FALSE(page->continue_token.empty());
  ListOptions next = two;
  next.continue_token = page->continue_token;
  auto rest = fake.List(Apps(), next);
  ASSERT_TRUE(rest.ok());
  EXPECT_EQ(rest->items.size(), 1u);
  EXPECT_TRUE(rest->continue_token.empty());
  ASSERT_TRUE(fake.Create(Apps(), App("d"), {}).ok());
  fake.Compact();  // the token's snapshot (before "d") is gone now
  EXPECT_TRUE(IsGone(fake.List(Apps(), next).status()));
  ListOptions one;
  one.limit = 1;
  auto all = ListAll(fake, Apps(), one);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->items.size(), 4u);
}

TEST(FakeKubeClientTest, InjectedFailuresComeFirstAndCallsAreRecorded) {
  FakeKubeClient fake;
  fake.FailNext("CREATE", absl::UnavailableError("boom"));
  EXPECT_EQ(fake.Create(Apps(), App("a"), {}).status().code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(fake.Create(Apps(), App("a"), {}).ok());
  EXPECT_EQ(fake.CountCalls("CREATE"), 2u);
  EXPECT_EQ(fake.Calls()[0].name, "a");
  fake.ClearCalls();
  EXPECT_TRUE(fake.Calls().empty());
}

TEST(FakeKubeClientTest, WatchReplaysHistoryFromAVersionAndReportsExpiredOnes) {
  FakeKubeClient fake;
  ASSERT_TRUE(fake.Create(Apps(), App("a"), {}).ok());
  ASSERT_TRUE(fake.Create(Apps(), App("b"), {}).ok());
  std::vector<std::string> names;
  std::stop_source stop;
  WatchOptions from101;
  from101.resource_version = "101";
  const absl::Status status = fake.Watch(
      Apps(), from101,
      [&](WatchEvent&& e) {
        names.push_back(e.object["metadata"]["name"]);
        return false;  // one event is enough
      },
      stop.get_token());
  EXPECT_TRUE(status.ok());
  EXPECT_THAT(names, ::testing::ElementsAre("b"));

  fake.Compact();
  WatchEvent got;
  ASSERT_TRUE(fake.Watch(
                      Apps(), from101,
                      [&](WatchEvent&& e) {
                        got = std::move(e);
                        return true;
                      },
                      stop.get_token())
                  .ok());
  EXPECT_EQ(got.type, WatchEventType::kError);
  EXPECT_EQ(got.object["code"], 410);
}

TEST(FakeKubeClientTest, AStopRequestEndsAnIdleWatchWithCancelled) {
  FakeKubeClient fake;
  std::stop_source stop;
  std::thread watcher([&] {
    const absl::Status status =
        fake.Watch(Apps(), WatchOptions(), [](WatchEvent&&) { return true; }, stop.get_token());
    EXPECT_EQ(status.code(), absl::StatusCode::kCancelled);
  });
  ASSERT_TRUE(fake.WaitForOpenWatches(1, std::chrono::seconds(5)));
  stop.request_stop();
  watcher.join();
  EXPECT_EQ(fake.OpenWatches(), 0);
}

}  // namespace
}  // namespace mmi::kube::testing
