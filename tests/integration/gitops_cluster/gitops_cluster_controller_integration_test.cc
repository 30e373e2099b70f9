// GitOpsClusterController against a real kube-apiserver (tests/peers/bin/start-kube ROLE=hub):
// the example GitOpsCluster with a Placement whose PlacementDecision lists a managed cluster
// produces the blank Argo CD cluster secret, the acm-placement ConfigMap and true status
// conditions; decision changes and ManagedCluster deletions are followed.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "absl/strings/escaping.h"
#include "libs/common/clock.h"
#include "libs/common/log.h"
#include "libs/common/sleeper.h"
#include "libs/kube/http_kube_client.h"
#include "libs/kube/rest_config.h"
#include "prometheus/registry.h"
#include "services/dispatcher/gitops/gitops_cluster.h"
#include "services/dispatcher/gitops/gitops_cluster_controller.h"
#include "tests/support/peer.h"
#include "tests/support/wait.h"

namespace mmi::dispatcher {
namespace {

using kube::ResourceRef;
using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr char kNs[] = "openshift-gitops";
constexpr auto kTimeout = seconds(60);

ResourceRef GitOpsClusters() {
  return {"apps.open-cluster-management.io", "v1beta1", "gitopsclusters", kNs};
}
ResourceRef Decisions() {
  return {"cluster.open-cluster-management.io", "v1beta1", "placementdecisions", kNs};
}
ResourceRef ManagedClusters() {
  return {"cluster.open-cluster-management.io", "v1", "managedclusters", ""};
}
ResourceRef Core(const char* resource, const std::string& ns = kNs) {
  return {"", "v1", resource, ns};
}

std::unique_ptr<kube::HttpKubeClient> ClientFor(const testing::PeerProcess& hub) {
  auto rest = kube::LoadKubeconfigFiles({hub.Get("KUBECONFIG")});
  EXPECT_TRUE(rest.ok()) << rest.status();
  if (!rest.ok()) {
    return nullptr;
  }
  kube::HttpKubeClientSettings settings;
  settings.rest = *rest;
  settings.rate_limit.qps = 0;
  auto client = kube::HttpKubeClient::Create(settings, RealClock::Instance(),
                                             RealSleeper::Instance(), nullptr);
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? std::move(*client) : nullptr;
}

json Decisions(const std::vector<std::string>& clusters) {
  json list = json::array();
  for (const auto& c : clusters) {
    list.push_back({{"clusterName", c}, {"reason", ""}});
  }
  return {{"status", {{"decisions", list}}}};
}

class GitOpsClusterIntegrationTest : public ::testing::Test {
 protected:
  GitOpsClusterIntegrationTest() { log::SetMinLevel(log::Level::kWarn); }

  void Create(const ResourceRef& ref, const json& object) {
    auto created = client_->Create(ref, object, {});
    ASSERT_TRUE(created.ok()) << created.status();
  }
  void SetDecisions(const std::vector<std::string>& clusters) {
    // status is a subresource of PlacementDecision: a write to the main path would drop it.
    auto patched = client_->Patch(Decisions(), "all-clusters-decision-1", kube::PatchType::kMerge,
                                  Decisions(clusters), {}, "status");
    ASSERT_TRUE(patched.ok()) << patched.status();
  }
  bool HasSecret(const std::string& cluster) {
    return client_->Get(Core("secrets"), cluster + "-application-manager-cluster-secret").ok();
  }
  std::string Condition(const std::string& type, const char* field = "status") {
    auto g = client_->Get(GitOpsClusters(), "argo-pull");
    if (!g.ok()) {
      return "";
    }
    for (const auto& c : g->value("status", json::object()).value("conditions", json::array())) {
      if (c.value("type", "") == type) {
        return c.value(field, "");
      }
    }
    return "";
  }
  std::string StatusMessage() {
    auto g = client_->Get(GitOpsClusters(), "argo-pull");
    return g.ok() ? g->value("status", json::object()).value("message", "") : "";
  }

  std::unique_ptr<kube::HttpKubeClient> client_;
};

TEST_F(GitOpsClusterIntegrationTest, ExampleGitOpsClusterProducesSecretAndConfigMap) {
  MMI_START_PEER(hub, "kube", {"ROLE=hub"});
  client_ = ClientFor(*hub);
  ASSERT_NE(client_, nullptr);

  // The hub: the Argo CD namespace with its server Service, two ManagedClusters, a Placement and
  // its PlacementDecision listing edge-1.
  Create(Core("namespaces", ""),
         {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", kNs}}}});
  Create(Core("services"), json::parse(R"({
    "apiVersion": "v1", "kind": "Service",
    "metadata": {"name": "openshift-gitops-server", "namespace": "openshift-gitops",
                 "labels": {"app.kubernetes.io/component": "server",
                            "app.kubernetes.io/part-of": "argocd"}},
    "spec": {"ports": [{"port": 443, "targetPort": 8080}]}
  })"));
  for (const char* c : {"edge-1", "edge-2"}) {
    Create(
        ManagedClusters(),
        {{"apiVersion", "cluster.open-cluster-management.io/v1"},
         {"kind", "ManagedCluster"},
         {"metadata",
          {{"name", c}, {"labels", {{"cluster.open-cluster-management.io/clusterset", "edge"}}}}},
         {"spec", {{"hubAcceptsClient", true}}}});
  }
  Create({"cluster.open-cluster-management.io", "v1beta1", "placements", kNs},
         {{"apiVersion", "cluster.open-cluster-management.io/v1beta1"},
          {"kind", "Placement"},
          {"metadata", {{"name", "all-clusters"}, {"namespace", kNs}}},
          {"spec", {{"clusterSets", {"edge"}}}}});
  Create(Decisions(), {{"apiVersion", "cluster.open-cluster-management.io/v1beta1"},
                       {"kind", "PlacementDecision"},
                       {"metadata",
                        {{"name", "all-clusters-decision-1"},
                         {"namespace", kNs},
                         {"labels",
                          {{kPlacementLabel, "all-clusters"},
                           {"cluster.open-cluster-management.io/decision-group-index", "0"}}}}}});
  SetDecisions({"edge-1"});
  Create(GitOpsClusters(), json::parse(R"({
    "apiVersion": "apps.open-cluster-management.io/v1beta1", "kind": "GitOpsCluster",
    "metadata": {"name": "argo-pull", "namespace": "openshift-gitops"},
    "spec": {"argoServer": {"cluster": "local-cluster", "argoNamespace": "openshift-gitops"},
             "placementRef": {"kind": "Placement",
                              "apiVersion": "cluster.open-cluster-management.io/v1beta1",
                              "name": "all-clusters"},
             "createBlankClusterSecrets": true}
  })"));

  prometheus::Registry registry;
  auto controller = std::make_unique<GitOpsClusterController>(
      *client_, RealClock::Instance(), GitOpsClusterControllerSettings{}, registry);
  ASSERT_TRUE(controller->Start().ok());
  ASSERT_TRUE(testing::WaitFor([&] { return controller->synced(); }, kTimeout));

  // The cluster secret, as the ApplicationSet generator and Argo CD read it.
  ASSERT_TRUE(testing::WaitFor([&] { return HasSecret("edge-1"); }, kTimeout));
  auto secret = client_->Get(Core("secrets"), "edge-1-application-manager-cluster-secret");
  ASSERT_TRUE(secret.ok()) << secret.status();
  EXPECT_EQ((*secret)["type"], "Opaque");
  EXPECT_EQ((*secret)["data"]["name"], absl::Base64Escape("edge-1"));
  EXPECT_EQ((*secret)["data"]["server"], absl::Base64Escape("https://edge-1-control-plane"));
  const json& labels = (*secret)["metadata"]["labels"];
  EXPECT_EQ(labels[kSecretTypeLabel], "cluster");
  EXPECT_EQ(labels[kAcmClusterLabel], "true");
  EXPECT_EQ(labels[kClusterNameLabel], "edge-1");
  EXPECT_EQ(labels[kClusterServerLabel], "edge-1-control-plane");
  EXPECT_EQ(labels[kDataSourceLabel], "blank");
  EXPECT_EQ(labels["cluster.open-cluster-management.io/clusterset"], "edge");
  EXPECT_FALSE(HasSecret("edge-2"));

  // The duck-type ConfigMap and the ApplicationSet controller's RBAC.
  auto cm = client_->Get(Core("configmaps"), "acm-placement");
  ASSERT_TRUE(cm.ok()) << cm.status();
  EXPECT_EQ((*cm)["data"]["kind"], "placementdecisions");
  EXPECT_EQ((*cm)["data"]["apiVersion"], "cluster.open-cluster-management.io/v1beta1");
  EXPECT_EQ((*cm)["data"]["statusListKey"], "decisions");
  EXPECT_EQ((*cm)["data"]["matchKey"], "clusterName");
  EXPECT_TRUE(client_->Get(Core("configmaps"), "acm-placementrule").ok());
  EXPECT_TRUE(client_
                  ->Get({"rbac.authorization.k8s.io", "v1", "rolebindings", kNs},
                        "openshift-gitops-applicationset-controller-placement")
                  .ok());

  // The status conditions, written through the status subresource.
  ASSERT_TRUE(testing::WaitFor([&] { return Condition(kCondReady) == "True"; }, kTimeout))
      << Condition(kCondReady, "message");
  for (const char* type :
       {kCondPlacementResolved, kCondArgoServerVerified, kCondApplicationSetResourcesReady,
        kCondPolicyTemplateReady, kCondClustersRegistered}) {
    EXPECT_EQ(Condition(type), "True") << type << ": " << Condition(type, "message");
  }
  EXPECT_EQ(StatusMessage(),
            "Added managed clusters [edge-1] to gitops namespace openshift-gitops");

  // The decision moves to edge-2: its secret appears; edge-1's stays while its ManagedCluster
  // exists (upstream behaviour, hub-apis §4.7) and goes once the ManagedCluster is deleted.
  SetDecisions({"edge-2"});
  ASSERT_TRUE(testing::WaitFor([&] { return HasSecret("edge-2"); }, kTimeout));
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        return StatusMessage() ==
               "Added managed clusters [edge-2] to gitops namespace openshift-gitops";
      },
      kTimeout));
  EXPECT_TRUE(HasSecret("edge-1"));
  ASSERT_TRUE(client_->Delete(ManagedClusters(), "edge-1", {}).ok());
  EXPECT_TRUE(testing::WaitFor([&] { return !HasSecret("edge-1"); }, kTimeout));
  controller->Stop();

  // Following the decisions strictly: the cluster's secret goes away with its decision.
  GitOpsClusterControllerSettings strict;
  strict.orphan_secret_policy = OrphanSecretPolicy::kDeleteWhenUndecided;
  prometheus::Registry registry2;
  controller =
      std::make_unique<GitOpsClusterController>(*client_, RealClock::Instance(), strict, registry2);
  ASSERT_TRUE(controller->Start().ok());
  SetDecisions({});
  EXPECT_TRUE(testing::WaitFor([&] { return !HasSecret("edge-2"); }, kTimeout));
  EXPECT_TRUE(testing::WaitFor(
      [&] {
        return StatusMessage() == "Added managed clusters [] to gitops namespace openshift-gitops";
      },
      kTimeout));
  EXPECT_EQ(Condition(kCondReady), "True");
  controller->Stop();
}

}  // namespace
}  // namespace mmi::dispatcher
