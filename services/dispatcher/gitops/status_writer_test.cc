// StatusWriter: the status subresource written only when it changed, through the controller.
#include "services/dispatcher/gitops/status_writer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "libs/kube_object/object.h"
#include "services/dispatcher/gitops/gitops_cluster.h"
#include "services/dispatcher/gitops/gitops_cluster_controller.h"
#include "services/dispatcher/gitops/testing/controller_fixture.h"

// In the fixture's namespace: its helpers and using-declarations need no repeating here.
namespace mmi::dispatcher::testing {
namespace {

using StatusWriterTest = GitOpsHubTest;

TEST_F(StatusWriterTest, StatusIsPatchedOnlyWhenItChanges) {
  CreateHub();
  Create(Decisions(), Decision("all-clusters-decision-1", "all-clusters", {"edge-1"}));
  Create(GitOpsClusters(), ExampleGitOpsCluster());
  StartController();
  ASSERT_TRUE(Eventually([&] { return Condition(kCondReady) == "True"; }));
  ASSERT_TRUE(Eventually([&] { return Reconciles("success") >= 1; }));
  const size_t patches = StatusPatches();
  EXPECT_EQ(patches, 1U);  // one write with every condition

  // Resyncs and unrelated decision events reconcile again without writing.
  for (int i = 1; i <= 3; ++i) {
    const double before = Reconciles("success");
    clock_.Advance(settings_.resync_period + seconds(1));
    ASSERT_TRUE(Eventually([&] { return Reconciles("success") > before; })) << i;
  }
  const double before = Reconciles("success");
  ASSERT_TRUE(kube_
                  .Patch(Decisions(), "all-clusters-decision-1", kube::PatchType::kMerge,
                         json::parse(R"({"status": {"decisions": [
                             {"clusterName": "edge-1", "reason": "x"}]}})"),
                         {}, "status")
                  .ok());
  ASSERT_TRUE(Eventually([&] { return Reconciles("success") > before; }));
  EXPECT_EQ(StatusPatches(), patches);
  EXPECT_EQ(Condition(kCondReady), "True");
  EXPECT_EQ(kube_.CountCalls("UPDATE"), 0U);  // the secret was already right

  // A real change is written.
  ASSERT_TRUE(kube_.Delete(Placements(), "all-clusters", {}).ok());
  clock_.Advance(settings_.resync_period + seconds(1));
  ASSERT_TRUE(Eventually([&] { return Condition(kCondPlacementResolved) == "False"; }));
  EXPECT_EQ(StatusPatches(), patches + 1);
}

}  // namespace
}  // namespace mmi::dispatcher::testing
