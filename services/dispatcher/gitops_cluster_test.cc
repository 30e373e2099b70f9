#include "services/dispatcher/gitops_cluster.h"

#include <gtest/gtest.h>

namespace mmi::dispatcher {
namespace {

using nlohmann::json;
using std::chrono::seconds;

json ExampleGitOpsCluster() {
  return json::parse(R"({
    "apiVersion": "apps.open-cluster-management.io/v1beta1", "kind": "GitOpsCluster",
    "metadata": {"name": "argo-pull", "namespace": "openshift-gitops"},
    "spec": {"argoServer": {"argoNamespace": "openshift-gitops"},
             "placementRef": {"kind": "Placement", "apiVersion": "cluster.open-cluster-management.io/v1beta1",
                              "name": "all-clusters"},
             "createBlankClusterSecrets": true}
  })");
}

json Decision(const std::string& name, std::vector<std::string> clusters) {
  json d = {{"metadata", {{"name", name}}}, {"status", {{"decisions", json::array()}}}};
  for (auto& c : clusters) {
    d["status"]["decisions"].push_back({{"clusterName", c}, {"reason", ""}});
  }
  return d;
}

TEST(GitOpsClusterSpecTest, ParsesTheExample) {
  auto spec = ParseGitOpsClusterSpec(ExampleGitOpsCluster());
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->argo_namespace, "openshift-gitops");
  EXPECT_EQ(spec->placement_name, "all-clusters");
  EXPECT_TRUE(spec->create_blank_cluster_secrets);
  EXPECT_EQ(spec->managed_service_account, "application-manager");
}

TEST(GitOpsClusterSpecTest, RejectsAPlacementRefOfAnotherKindNamingTheField) {
  json g = ExampleGitOpsCluster();
  g["spec"]["placementRef"]["kind"] = "PlacementRule";
  auto spec = ParseGitOpsClusterSpec(g);
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(spec.status().message()).find("spec.placementRef"), std::string::npos);
  g = ExampleGitOpsCluster();
  g["spec"]["argoServer"].erase("argoNamespace");
  EXPECT_EQ(ParseGitOpsClusterSpec(g).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ResolveDecisionsTest, UnitesPagedDecisionsAndSkipsUnscheduledEntries) {
  auto clusters = ResolveDecisions({Decision("p-decision-1", {"edge-1", "edge-2", ""}),
                                    Decision("p-decision-2", {"edge-2", "edge-3"}),
                                    json::parse(R"({"metadata": {"name": "p-decision-3"}})")});
  ASSERT_TRUE(clusters.ok()) << clusters.status();
  EXPECT_EQ(*clusters, (std::set<std::string>{"edge-1", "edge-2", "edge-3"}));
}

TEST(ResolveDecisionsTest, RejectsHostileClusterNames) {
  EXPECT_EQ(ResolveDecisions({Decision("d", {"../../etc"})}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(BlankClusterSecretTest, MatchesTheUpstreamBlankSecret) {
  auto spec = ParseGitOpsClusterSpec(ExampleGitOpsCluster());
  ASSERT_TRUE(spec.ok());
  const json mc = json::parse(R"({"metadata": {"name": "edge-7", "labels": {
      "cluster.open-cluster-management.io/clusterset": "edge", "name": "edge-7"}}})");
  const json s = BlankClusterSecret(mc, *spec);
  EXPECT_EQ(s["metadata"]["name"], "edge-7-application-manager-cluster-secret");
  EXPECT_EQ(s["metadata"]["namespace"], "openshift-gitops");
  EXPECT_EQ(s["type"], "Opaque");
  EXPECT_EQ(s["stringData"],
            json::parse(R"({"name": "edge-7", "server": "https://edge-7-control-plane"})"));
  const json& l = s["metadata"]["labels"];
  EXPECT_EQ(l[kSecretTypeLabel], "cluster");
  EXPECT_EQ(l[kAcmClusterLabel], "true");
  EXPECT_EQ(l[kClusterNameLabel], "edge-7");
  EXPECT_EQ(l[kClusterServerLabel], "edge-7-control-plane");
  EXPECT_EQ(l[kDataSourceLabel], "blank");
  EXPECT_EQ(l["cluster.open-cluster-management.io/clusterset"], "edge");
  EXPECT_EQ(ClusterOfSecret(s), "edge-7");
}

TEST(ClusterOfSecretTest, FallsBackToBase64DataName) {
  const json s = json::parse(R"({"metadata": {}, "data": {"name": "ZWRnZS05"}})");
  EXPECT_EQ(ClusterOfSecret(s), "edge-9");
  EXPECT_EQ(ClusterOfSecret(json::parse(R"({"metadata": {}})")), "");
}

TEST(DuckTypeConfigMapsTest, DescribePlacementDecisionsForTheGenerator) {
  auto cms = DuckTypeConfigMaps("openshift-gitops");
  ASSERT_EQ(cms.size(), 2U);
  EXPECT_EQ(cms[0]["metadata"]["name"], "acm-placement");
  EXPECT_EQ(cms[0]["data"],
            json::parse(R"({"apiVersion": "cluster.open-cluster-management.io/v1beta1",
      "kind": "placementdecisions", "statusListKey": "decisions", "matchKey": "clusterName"})"));
  EXPECT_EQ(cms[1]["metadata"]["name"], "acm-placementrule");
}

TEST(ConditionsTest, TransitionTimeMovesOnlyWhenStatusFlips) {
  const auto t0 = std::chrono::system_clock::time_point(seconds(1'800'000'000));
  json status;
  EXPECT_TRUE(SetCondition(status, kCondPlacementResolved, "True", "Success", "ok", t0));
  EXPECT_FALSE(
      SetCondition(status, kCondPlacementResolved, "True", "Success", "ok", t0 + seconds(5)));
  EXPECT_EQ(status["conditions"][0]["lastTransitionTime"], KubeTime(t0));
  EXPECT_TRUE(
      SetCondition(status, kCondPlacementResolved, "True", "Success", "other", t0 + seconds(5)));
  EXPECT_EQ(status["conditions"][0]["lastTransitionTime"], KubeTime(t0));
  EXPECT_TRUE(SetCondition(status, kCondPlacementResolved, "False", "PlacementNotFound", "x",
                           t0 + seconds(9)));
  EXPECT_EQ(status["conditions"][0]["lastTransitionTime"], KubeTime(t0 + seconds(9)));
  EXPECT_EQ(KubeTime(t0), "2027-01-15T08:00:00Z");
}

TEST(ConditionsTest, ReadyFollowsTheOtherConditions) {
  const auto now = std::chrono::system_clock::time_point(seconds(1'800'000'000));
  json status;
  SetCondition(status, kCondPlacementResolved, "True", "Success", "", now);
  SetCondition(status, kCondClustersRegistered, "Unknown", "Reconciling", "", now);
  UpdateReadyCondition(status, now);
  auto ready = [&] {
    for (auto& c : status["conditions"]) {
      if (c["type"] == kCondReady) {
        return c["status"].get<std::string>();
      }
    }
    return std::string();
  };
  EXPECT_EQ(ready(), "Unknown");
  SetCondition(status, kCondClustersRegistered, "True", "Success", "", now);
  UpdateReadyCondition(status, now);
  EXPECT_EQ(ready(), "True");
  SetCondition(status, kCondPlacementResolved, "False", "PlacementNotFound", "", now);
  UpdateReadyCondition(status, now);
  EXPECT_EQ(ready(), "False");
}

}  // namespace
}  // namespace mmi::dispatcher
