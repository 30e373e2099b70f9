// ClusterSecretWriter: blank cluster secrets written, kept and refused, through the controller on a
// fake hub.
#include "services/dispatcher/gitops/cluster_secret_writer.h"

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

using ClusterSecretWriterTest = GitOpsHubTest;

TEST_F(ClusterSecretWriterTest, DecisionsBecomeBlankClusterSecretsAndTheDuckTypeConfigMap) {
  CreateHub();
  Create(Decisions(), Decision("all-clusters-decision-1", "all-clusters", {"edge-1", "edge-2"}));
  Create(GitOpsClusters(), ExampleGitOpsCluster());
  StartController();

  ASSERT_TRUE(Eventually([&] { return Condition(kCondReady) == "True"; })) << GitOpsStatus();
  for (const char* c : {"edge-1", "edge-2"}) {
    auto secret = kube_.Get(Core("secrets"), SecretName(c));
    ASSERT_TRUE(secret.ok()) << c;
    EXPECT_EQ((*secret)["type"], "Opaque");
    EXPECT_EQ((*secret)["stringData"]["name"], c);
    EXPECT_EQ((*secret)["stringData"]["server"], std::string("https://") + c + "-control-plane");
    const json& labels = (*secret)["metadata"]["labels"];
    EXPECT_EQ(labels[kSecretTypeLabel], "cluster");
    EXPECT_EQ(labels[kAcmClusterLabel], "true");
    EXPECT_EQ(labels[kClusterNameLabel], c);
    EXPECT_EQ(labels[kDataSourceLabel], "blank");
    EXPECT_EQ(labels["cluster.open-cluster-management.io/clusterset"], "edge");
    EXPECT_EQ(labels[kManagedByLabel], "mmi-dispatcher");
  }
  EXPECT_FALSE(HasSecret("edge-3"));

  auto cm = kube_.Get(Core("configmaps"), "acm-placement");
  ASSERT_TRUE(cm.ok()) << cm.status();
  EXPECT_EQ((*cm)["data"],
            json::parse(R"({"apiVersion": "cluster.open-cluster-management.io/v1beta1",
      "kind": "placementdecisions", "statusListKey": "decisions", "matchKey": "clusterName"})"));
  EXPECT_TRUE(kube_.Get(Core("configmaps"), "acm-placementrule").ok());
  auto role = kube_.Get(Rbac("roles"), "openshift-gitops-applicationset-controller-placement");
  ASSERT_TRUE(role.ok()) << role.status();
  EXPECT_EQ(role->at("rules")[1]["resources"][0], "placementdecisions");
  auto binding =
      kube_.Get(Rbac("rolebindings"), "openshift-gitops-applicationset-controller-placement");
  ASSERT_TRUE(binding.ok()) << binding.status();
  EXPECT_EQ(binding->at("subjects")[0]["name"], "openshift-gitops-applicationset-controller");

  for (const char* type :
       {kCondPlacementResolved, kCondArgoServerVerified, kCondApplicationSetResourcesReady,
        kCondPolicyTemplateReady, kCondClustersRegistered}) {
    EXPECT_EQ(Condition(type), "True") << type;
  }
  const json status = GitOpsStatus();
  EXPECT_EQ(status["phase"], "successful");
  EXPECT_EQ(status["message"],
            "Added managed clusters [edge-1 edge-2] to gitops namespace "
            "openshift-gitops");
  EXPECT_TRUE(status.contains("lastUpdateTime"));
  EXPECT_EQ(Condition(kCondReady, "lastTransitionTime"), KubeTime(clock_.Now()));
  EXPECT_TRUE(Eventually([&] { return Reconciles("success") >= 1; }));
  EXPECT_TRUE(
      Eventually([&] { return MetricValue(registry_, "mmi_gitopscluster_managed_secrets") == 2; }));
  EXPECT_TRUE(Eventually(
      [&] { return MetricValue(registry_, "mmi_gitopscluster_reconcile_duration_seconds") >= 1; }));
}

TEST_F(ClusterSecretWriterTest, FollowsManagedClusterLabelsAndRecreatesDeletedSecrets) {
  CreateHub();
  Create(Decisions(), Decision("all-clusters-decision-1", "all-clusters", {"edge-1"}));
  Create(GitOpsClusters(), ExampleGitOpsCluster());
  StartController();
  ASSERT_TRUE(Eventually([&] { return HasSecret("edge-1"); }));

  ASSERT_TRUE(kube_
                  .Patch(ManagedClusters(), "edge-1", kube::PatchType::kMerge,
                         json::parse(R"({"metadata": {"labels": {"tier": "gold"}}})"), {}, "")
                  .ok());
  EXPECT_TRUE(Eventually([&] {
    auto s = kube_.Get(Core("secrets"), SecretName("edge-1"));
    return s.ok() && (*s)["metadata"]["labels"].value("tier", "") == "gold";
  }));

  ASSERT_TRUE(kube_.Delete(Core("secrets"), SecretName("edge-1"), {}).ok());
  EXPECT_TRUE(Eventually([&] { return HasSecret("edge-1"); }));
}

TEST_F(ClusterSecretWriterTest, ForeignArgoCdClusterSecretBlocksThatClusterOnly) {
  CreateHub();
  Create(
      Core("secrets"),
      {{"metadata",
        {{"name", "my-edge-1"}, {"namespace", kNs}, {"labels", {{kSecretTypeLabel, "cluster"}}}}},
       {"stringData", {{"name", "edge-1"}, {"server", "https://edge-1.example"}}}});
  Create(Decisions(), Decision("all-clusters-decision-1", "all-clusters", {"edge-1", "edge-2"}));
  Create(GitOpsClusters(), ExampleGitOpsCluster());
  StartController();
  ASSERT_TRUE(Eventually([&] { return Condition(kCondClustersRegistered) == "False"; }));
  EXPECT_NE(Condition(kCondClustersRegistered, "message").find("non-ACM"), std::string::npos);
  EXPECT_TRUE(HasSecret("edge-2"));
  EXPECT_FALSE(HasSecret("edge-1"));
}

}  // namespace
}  // namespace mmi::dispatcher::testing
