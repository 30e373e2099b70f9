// OrphanSecretCollector: orphaned cluster secrets by policy, through the controller on a fake hub.
#include "services/dispatcher/gitops/orphan_secret_collector.h"

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

using OrphanSecretCollectorTest = GitOpsHubTest;

TEST_F(OrphanSecretCollectorTest, ClusterDroppedFromTheDecisionsLosesItsSecretWhenConfigured) {
  settings_.orphan_secret_policy = OrphanSecretPolicy::kDeleteWhenUndecided;
  CreateHub();
  Create(Decisions(), Decision("all-clusters-decision-1", "all-clusters", {"edge-1", "edge-2"}));
  Create(GitOpsClusters(), ExampleGitOpsCluster());
  StartController();
  ASSERT_TRUE(Eventually([&] { return HasSecret("edge-1") && HasSecret("edge-2"); }));

  auto patched = kube_.Patch(Decisions(), "all-clusters-decision-1", kube::PatchType::kMerge,
                             json::parse(R"({"status": {"decisions": [
                                 {"clusterName": "edge-2", "reason": ""},
                                 {"clusterName": "edge-3", "reason": ""}]}})"),
                             {}, "status");
  ASSERT_TRUE(patched.ok()) << patched.status();
  ASSERT_TRUE(Eventually([&] { return !HasSecret("edge-1") && HasSecret("edge-3"); }));
  EXPECT_TRUE(HasSecret("edge-2"));
  EXPECT_TRUE(Eventually([&] {
    return GitOpsStatus().value("message", "") ==
           "Added managed clusters [edge-2 edge-3] to gitops namespace openshift-gitops";
  })) << GitOpsStatus();
}

TEST_F(OrphanSecretCollectorTest, ByDefaultAnUndecidedClusterKeepsItsSecretUntilItIsGone) {
  CreateHub();
  Create(Decisions(), Decision("all-clusters-decision-1", "all-clusters", {"edge-1", "edge-2"}));
  Create(GitOpsClusters(), ExampleGitOpsCluster());
  StartController();
  ASSERT_TRUE(Eventually([&] { return HasSecret("edge-1") && HasSecret("edge-2"); }));

  ASSERT_TRUE(kube_
                  .Patch(Decisions(), "all-clusters-decision-1", kube::PatchType::kMerge,
                         json::parse(R"({"status": {"decisions": [
                             {"clusterName": "edge-2", "reason": ""}]}})"),
                         {}, "status")
                  .ok());
  ASSERT_TRUE(Eventually([&] {
    return GitOpsStatus().value("message", "") ==
           "Added managed clusters [edge-2] to gitops namespace openshift-gitops";
  }));
  EXPECT_TRUE(HasSecret("edge-1"));  // upstream keeps it while the ManagedCluster exists (§4.7)

  ASSERT_TRUE(kube_.Delete(ManagedClusters(), "edge-1", {}).ok());
  EXPECT_TRUE(Eventually([&] { return !HasSecret("edge-1"); }));
  EXPECT_TRUE(HasSecret("edge-2"));
}

TEST_F(OrphanSecretCollectorTest, DeletedGitOpsClusterStopsManagingAndLeavesSecretsByDefault) {
  CreateHub();
  Create(Decisions(), Decision("all-clusters-decision-1", "all-clusters", {"edge-1"}));
  Create(GitOpsClusters(), ExampleGitOpsCluster());
  StartController();
  ASSERT_TRUE(Eventually([&] { return HasSecret("edge-1"); }));
  ASSERT_TRUE(
      Eventually([&] { return MetricValue(registry_, "mmi_gitopscluster_managed_secrets") == 1; }));

  ASSERT_TRUE(kube_.Delete(GitOpsClusters(), "argo-pull", {}).ok());
  ASSERT_TRUE(
      Eventually([&] { return MetricValue(registry_, "mmi_gitopscluster_managed_secrets") == 0; }));
  // No longer follows the decisions...
  ASSERT_TRUE(kube_
                  .Patch(Decisions(), "all-clusters-decision-1", kube::PatchType::kMerge,
                         json::parse(R"({"status": {"decisions": [
                             {"clusterName": "edge-1", "reason": ""},
                             {"clusterName": "edge-2", "reason": ""}]}})"),
                         {}, "status")
                  .ok());
  // (A GitOpsCluster created afterwards and reconciled shows the loop got past those events.)
  json sentinel = ExampleGitOpsCluster();
  sentinel["metadata"]["name"] = "sentinel";
  sentinel["spec"]["placementRef"]["kind"] = "PlacementRule";
  Create(GitOpsClusters(), sentinel);
  ASSERT_TRUE(Eventually([&] { return Condition(kCondReady, "status", "sentinel") == "False"; }));
  EXPECT_FALSE(HasSecret("edge-2"));
  // ... and, as upstream (§4.7), its secrets stay while their ManagedClusters exist; the ConfigMap
  // stays too.
  EXPECT_TRUE(HasSecret("edge-1"));
  EXPECT_TRUE(kube_.Get(Core("configmaps"), "acm-placement").ok());
  ASSERT_TRUE(kube_.Delete(ManagedClusters(), "edge-1", {}).ok());
  EXPECT_TRUE(Eventually([&] { return !HasSecret("edge-1"); }));
}

TEST_F(OrphanSecretCollectorTest, DeletedGitOpsClusterTakesItsSecretsWhenFollowingDecisions) {
  settings_.orphan_secret_policy = OrphanSecretPolicy::kDeleteWhenUndecided;
  CreateHub();
  Create(Decisions(), Decision("all-clusters-decision-1", "all-clusters", {"edge-1", "edge-2"}));
  Create(GitOpsClusters(), ExampleGitOpsCluster());
  // A second GitOpsCluster deciding edge-2 as well keeps that one alive.
  json other = ExampleGitOpsCluster();
  other["metadata"]["name"] = "argo-pull-2";
  other["spec"]["placementRef"]["name"] = "second";
  Create(Placements(), {{"metadata", {{"name", "second"}, {"namespace", kNs}}}});
  Create(Decisions(), Decision("second-decision-1", "second", {"edge-2"}));
  Create(GitOpsClusters(), other);
  StartController();
  ASSERT_TRUE(Eventually([&] { return HasSecret("edge-1") && HasSecret("edge-2"); }));
  ASSERT_TRUE(Eventually([&] { return Condition(kCondReady, "status", "argo-pull-2") == "True"; }));

  ASSERT_TRUE(kube_.Delete(GitOpsClusters(), "argo-pull", {}).ok());
  EXPECT_TRUE(Eventually([&] { return !HasSecret("edge-1"); }));
  EXPECT_TRUE(HasSecret("edge-2"));
}

TEST_F(OrphanSecretCollectorTest, RenamedSecretReplacesTheOldOneForTheSameCluster) {
  CreateHub();
  Create(Decisions(), Decision("all-clusters-decision-1", "all-clusters", {"edge-1"}));
  Create(GitOpsClusters(), ExampleGitOpsCluster());
  StartController();
  ASSERT_TRUE(Eventually([&] { return HasSecret("edge-1"); }));

  ASSERT_TRUE(kube_
                  .Patch(GitOpsClusters(), "argo-pull", kube::PatchType::kMerge,
                         json::parse(R"({"spec": {"managedServiceAccountRef": "gitops-sa"}})"), {},
                         "")
                  .ok());
  EXPECT_TRUE(Eventually(
      [&] { return kube_.Get(Core("secrets"), "edge-1-gitops-sa-cluster-secret").ok(); }));
  // Deleted although the ManagedCluster exists: two secrets would be two clusters of one name.
  EXPECT_TRUE(Eventually([&] { return !HasSecret("edge-1"); }));
}

}  // namespace
}  // namespace mmi::dispatcher::testing
