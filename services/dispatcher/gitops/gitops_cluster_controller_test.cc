#include "services/dispatcher/gitops/gitops_cluster_controller.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "libs/kube_object/object.h"
#include "services/dispatcher/gitops/gitops_cluster.h"
#include "services/dispatcher/gitops/testing/controller_fixture.h"

// In the fixture's namespace: its helpers and using-declarations need no repeating here.
namespace mmi::dispatcher::testing {
namespace {

using GitOpsClusterControllerTest = GitOpsHubTest;

TEST_F(GitOpsClusterControllerTest, InvalidSpecSetsAFalseConditionWithAReasonAndWritesNothing) {
  CreateHub();
  Create(Decisions(), Decision("all-clusters-decision-1", "all-clusters", {"edge-1"}));
  json g = ExampleGitOpsCluster();
  g["spec"]["placementRef"]["kind"] = "PlacementRule";
  Create(GitOpsClusters(), g);
  json bad_ns = ExampleGitOpsCluster();
  bad_ns["metadata"]["name"] = "bad-namespace";
  bad_ns["spec"]["argoServer"]["argoNamespace"] = "Not_A_Namespace";
  Create(GitOpsClusters(), bad_ns);
  StartController();

  ASSERT_TRUE(Eventually([&] { return Condition(kCondPlacementResolved) == "False"; }))
      << GitOpsStatus();
  EXPECT_EQ(Condition(kCondPlacementResolved, "reason"), kReasonInvalidConfiguration);
  EXPECT_NE(Condition(kCondPlacementResolved, "message").find("spec.placementRef"),
            std::string::npos);
  EXPECT_EQ(Condition(kCondReady), "False");
  EXPECT_EQ(Condition(kCondClustersRegistered), "Unknown");
  EXPECT_EQ(GitOpsStatus()["phase"], "failed");
  ASSERT_TRUE(Eventually(
      [&] { return Condition(kCondArgoServerVerified, "status", "bad-namespace") == "False"; }));
  EXPECT_EQ(Condition(kCondArgoServerVerified, "reason", "bad-namespace"),
            kReasonInvalidConfiguration);
  EXPECT_FALSE(HasSecret("edge-1"));
  EXPECT_TRUE(Eventually([&] { return Reconciles("failed") >= 2; }));

  // Fixing the spec is picked up.
  auto fixed =
      kube_.Patch(GitOpsClusters(), "argo-pull", kube::PatchType::kMerge,
                  json::parse(R"({"spec": {"placementRef": {"kind": "Placement"}}})"), {}, "");
  ASSERT_TRUE(fixed.ok()) << fixed.status();
  EXPECT_TRUE(Eventually([&] { return Condition(kCondReady) == "True"; })) << GitOpsStatus();
  EXPECT_TRUE(HasSecret("edge-1"));
}

TEST_F(GitOpsClusterControllerTest, FailedWritesAreRetriedWithBackoff) {
  CreateHub();
  Create(Decisions(), Decision("all-clusters-decision-1", "all-clusters", {"edge-1"}));
  Create(GitOpsClusters(), ExampleGitOpsCluster());
  kube_.FailNext("CREATE", absl::UnavailableError("etcd leader changed"));  // first ConfigMap
  StartController();
  ASSERT_TRUE(Eventually([&] { return Reconciles("error") == 1; }));
  ASSERT_TRUE(Eventually([&] { return Condition(kCondApplicationSetResourcesReady) == "False"; }));
  EXPECT_EQ(Condition(kCondApplicationSetResourcesReady, "reason"), kReasonConfigMapCreationFailed);
  EXPECT_EQ(Condition(kCondReady), "False");
  EXPECT_TRUE(HasSecret("edge-1"));  // the reconcile went on (§4.4 steps 6-7)

  clock_.Advance(settings_.retry_backoff.max);
  ASSERT_TRUE(Eventually([&] { return Condition(kCondReady) == "True"; })) << GitOpsStatus();
  EXPECT_TRUE(kube_.Get(Core("configmaps"), "acm-placement").ok());
}

TEST_F(GitOpsClusterControllerTest, StartsOnceAndStopsIdempotently) {
  StartController();
  EXPECT_EQ(controller_->Start().code(), absl::StatusCode::kFailedPrecondition);
  controller_->Stop();
  controller_->Stop();

  settings_.max_queue_depth = 0;
  GitOpsClusterController invalid(kube_, clock_, settings_, registry_);
  EXPECT_EQ(invalid.Start().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace mmi::dispatcher::testing
