// ArgoServerVerifier: the Argo CD namespace and server checks, through the controller on a fake
// hub.
#include "services/dispatcher/gitops/argo_server_verifier.h"

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

using ArgoServerVerifierTest = GitOpsHubTest;

TEST_F(ArgoServerVerifierTest, MissingArgoServerOrPlacementIsReported) {
  Create(Core("namespaces", ""), {{"metadata", {{"name", kNs}}}});
  Create(ManagedClusters(), ManagedCluster("edge-1"));
  Create(Decisions(), Decision("all-clusters-decision-1", "all-clusters", {"edge-1"}));
  Create(GitOpsClusters(), ExampleGitOpsCluster());
  StartController();

  ASSERT_TRUE(Eventually([&] { return Condition(kCondArgoServerVerified) == "False"; }));
  EXPECT_EQ(Condition(kCondArgoServerVerified, "reason"), kReasonArgoServerNotFound);
  EXPECT_FALSE(HasSecret("edge-1"));

  // Skipping the probe by annotation gets to the (missing) Placement.
  ASSERT_TRUE(kube_
                  .Patch(GitOpsClusters(), "argo-pull", kube::PatchType::kMerge,
                         json::parse(R"({"metadata": {"annotations": {
                             "skipArgoNamespaceVerify": "true"}}})"),
                         {}, "")
                  .ok());
  ASSERT_TRUE(Eventually([&] { return Condition(kCondPlacementResolved) == "False"; }))
      << GitOpsStatus();
  EXPECT_EQ(Condition(kCondPlacementResolved, "reason"), kReasonPlacementNotFound);
  EXPECT_EQ(Condition(kCondArgoServerVerified), "True");
  EXPECT_FALSE(HasSecret("edge-1"));
}

TEST_F(ArgoServerVerifierTest, ArgoNamespaceOfAnotherNamespaceMustBeAuthorised) {
  CreateHub();
  Create(Core("namespaces", ""), {{"metadata", {{"name", "argocd"}}}});
  Create(
      Core("services", "argocd"),
      {{"metadata",
        {{"name", "argocd-server"},
         {"namespace", "argocd"},
         {"labels",
          {{"app.kubernetes.io/component", "server"}, {"app.kubernetes.io/part-of", "argocd"}}}}}});
  Create(Decisions(), Decision("all-clusters-decision-1", "all-clusters", {"edge-1"}));
  json g = ExampleGitOpsCluster();
  g["spec"]["argoServer"]["argoNamespace"] = "argocd";
  Create(GitOpsClusters(), g);
  StartController();

  ASSERT_TRUE(Eventually([&] { return Condition(kCondArgoServerVerified) == "False"; }));
  EXPECT_EQ(Condition(kCondArgoServerVerified, "reason"), kReasonInvalidConfiguration);
  EXPECT_FALSE(kube_.Get(Core("secrets", "argocd"), SecretName("edge-1")).ok());

  // Labelling the namespace authorises it (picked up by the periodic resync).
  ASSERT_TRUE(kube_
                  .Patch(Core("namespaces", ""), "argocd", kube::PatchType::kMerge,
                         {{"metadata", {{"labels", {{kGitOpsArgoNamespaceLabel, "true"}}}}}}, {},
                         "")
                  .ok());
  clock_.Advance(settings_.resync_period);
  EXPECT_TRUE(
      Eventually([&] { return kube_.Get(Core("secrets", "argocd"), SecretName("edge-1")).ok(); }));
  EXPECT_TRUE(Eventually([&] { return Condition(kCondReady) == "True"; })) << GitOpsStatus();
}

}  // namespace
}  // namespace mmi::dispatcher::testing
