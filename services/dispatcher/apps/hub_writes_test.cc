#include "services/dispatcher/apps/hub_writes.h"

#include <gtest/gtest.h>

#include "libs/kube/testing/fake_kube_client.h"
#include "services/dispatcher/apps/finalizers.h"
#include "services/dispatcher/apps/payload.h"

namespace mmi::dispatcher {
namespace {

using nlohmann::json;

json App() {
  return {{"apiVersion", "argoproj.io/v1alpha1"},
          {"kind", "Application"},
          {"metadata",
           {{"name", "a"},
            {"namespace", "argocd"},
            {"finalizers", {"x.example.com/keep", kResourcesFinalizer}},
            {"annotations", {{kRefreshAnnotation, "hard"}, {"other", "1"}}}}},
          {"spec", {{"project", "default"}}},
          {"operation", {{"sync", {{"revision", "HEAD"}}}}}};
}

TEST(HubWritesTest, ReleasesOnlyOurFinalizerWithAGuardedPatch) {
  kube::testing::FakeKubeClient hub;
  ASSERT_TRUE(hub.Create(ApplicationsRef("argocd"), App(), {}).ok());
  ASSERT_TRUE(hub.Delete(ApplicationsRef("argocd"), "a", {}).ok());  // deletionTimestamp set
  ASSERT_TRUE(ReleaseFinalizer(hub, "argocd", "a").ok());
  auto after = hub.Get(ApplicationsRef("argocd"), "a");
  ASSERT_TRUE(after.ok());
  EXPECT_EQ((*after)["metadata"]["finalizers"], json::array({"x.example.com/keep"}));
  // Idempotent: nothing left to remove, and a vanished Application is fine too.
  EXPECT_TRUE(ReleaseFinalizer(hub, "argocd", "a").ok());
  EXPECT_TRUE(ReleaseFinalizer(hub, "argocd", "gone").ok());
  EXPECT_FALSE(ReleaseFinalizerPatch(*after).has_value());
}

TEST(HubWritesTest, TheLastFinalizerRemovedLetsTheApplicationGo) {
  kube::testing::FakeKubeClient hub;
  json app = App();
  app["metadata"]["finalizers"] = {kResourcesFinalizer};
  ASSERT_TRUE(hub.Create(ApplicationsRef("argocd"), app, {}).ok());
  ASSERT_TRUE(hub.Delete(ApplicationsRef("argocd"), "a", {}).ok());
  ASSERT_TRUE(ReleaseFinalizer(hub, "argocd", "a").ok());
  EXPECT_TRUE(absl::IsNotFound(hub.Get(ApplicationsRef("argocd"), "a").status()));
}

TEST(HubWritesTest, EventsNameTheApplication) {
  KubeEventSpec spec;
  spec.reason = "UnknownManagedCluster";
  spec.message = "m";
  const json ev = MakeKubeEvent(
      App(), spec, std::chrono::system_clock::time_point(std::chrono::seconds(0)), "abc");
  EXPECT_EQ(ev["metadata"]["name"], "a.abc");
  EXPECT_EQ(ev["metadata"]["namespace"], "argocd");
  EXPECT_EQ(ev["involvedObject"]["kind"], "Application");
  EXPECT_EQ(ev["reason"], "UnknownManagedCluster");
  EXPECT_EQ(ev["firstTimestamp"], "1970-01-01T00:00:00Z");
}

}  // namespace
}  // namespace mmi::dispatcher
