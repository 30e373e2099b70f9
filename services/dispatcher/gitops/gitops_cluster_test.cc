#include "services/dispatcher/gitops/gitops_cluster.h"

#include <gtest/gtest.h>

#include "libs/kube_object/object.h"

namespace mmi::dispatcher {
namespace {

using kube::KubeTime;
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

TEST(GitOpsClusterSpecTest, RejectsAPlacementNameThatIsNoLabelValue) {
  json g = ExampleGitOpsCluster();
  g["spec"]["placementRef"]["name"] = "a,b=c";
  auto spec = ParseGitOpsClusterSpec(g);
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(spec.status().message()).find("spec.placementRef.name"), std::string::npos);
}

TEST(ConditionsTest, EnsureConditionsAddsTheMissingOnesAsUnknown) {
  const auto now = std::chrono::system_clock::time_point(seconds(1'800'000'000));
  json status;
  SetCondition(status, kCondPlacementResolved, "True", "Success", "", now);
  EnsureConditions(status, now);
  EXPECT_EQ(status["conditions"].size(), 6U);
  EXPECT_EQ(ConditionStatus(status, kCondPlacementResolved), "True");
  EXPECT_EQ(ConditionStatus(status, kCondClustersRegistered), "Unknown");
  EXPECT_EQ(ConditionStatus(status, kCondReady), "Unknown");
  EXPECT_EQ(ConditionStatus(status, "Nope"), "");
}

TEST(MessagesTest, AddedClustersMessageAndCap) {
  EXPECT_EQ(AddedClustersMessage({"b", "a"}, "argocd"),
            "Added managed clusters [a b] to gitops namespace argocd");
  std::set<std::string> many;
  for (int i = 0; i < 1000; ++i) {
    many.insert("cluster-" + std::to_string(i));
  }
  EXPECT_LT(AddedClustersMessage(many, "argocd").size(), 4200U);
  EXPECT_EQ(CapMessage(std::string(100, 'x'), 40).size(), 40U);
  EXPECT_EQ(CapMessage("short", 40), "short");
}

TEST(ClusterSecretTest, UpToDateComparesTypeLabelsAndDecodedData) {
  auto spec = ParseGitOpsClusterSpec(ExampleGitOpsCluster());
  ASSERT_TRUE(spec.ok());
  const json mc = json::parse(R"({"metadata": {"name": "edge-7"}})");
  const json desired = BlankClusterSecret(mc, *spec);
  json stored = desired;
  stored.erase("stringData");
  stored["data"] = {{"name", "ZWRnZS03"}, {"server", "aHR0cHM6Ly9lZGdlLTctY29udHJvbC1wbGFuZQ=="}};
  EXPECT_TRUE(ClusterSecretUpToDate(stored, desired));
  EXPECT_EQ(EffectiveSecretData(stored)["server"], "https://edge-7-control-plane");
  json with_config = stored;
  with_config["data"]["config"] = "e30=";
  EXPECT_FALSE(ClusterSecretUpToDate(with_config, desired));
  json relabelled = stored;
  relabelled["metadata"]["labels"]["extra"] = "x";
  EXPECT_FALSE(ClusterSecretUpToDate(relabelled, desired));
}

TEST(ClusterSecretTest, UpdateKeepsAnnotationsFinalizersAndDropsOldData) {
  auto spec = ParseGitOpsClusterSpec(ExampleGitOpsCluster());
  ASSERT_TRUE(spec.ok());
  const json desired =
      BlankClusterSecret(json::parse(R"({"metadata": {"name": "edge-7"}})"), *spec);
  const json existing =
      json::parse(R"({"metadata": {"name": "edge-7-application-manager-cluster-secret",
      "namespace": "openshift-gitops", "resourceVersion": "42", "finalizers": ["keep"],
      "annotations": {"team": "a", "kubectl.kubernetes.io/last-applied-configuration": "{}"},
      "labels": {"old": "x"}}, "data": {"config": "e30="}})");
  const json update = ClusterSecretUpdate(existing, desired);
  EXPECT_EQ(update["metadata"]["resourceVersion"], "42");
  EXPECT_EQ(update["metadata"]["annotations"], json::parse(R"({"team": "a"})"));
  EXPECT_EQ(update["metadata"]["finalizers"], json::parse(R"(["keep"])"));
  EXPECT_EQ(update["metadata"]["labels"], desired["metadata"]["labels"]);
  EXPECT_FALSE(update.contains("data"));
  EXPECT_EQ(update["stringData"], desired["stringData"]);
}

TEST(AppSetRbacTest, RoleBindingNamesTheApplicationSetControllerServiceAccount) {
  const json role = AppSetPlacementRole("argocd");
  EXPECT_EQ(role["metadata"]["name"], "argocd-applicationset-controller-placement");
  EXPECT_EQ(role["rules"][1]["resources"][0], "placementdecisions");
  EXPECT_EQ(role["rules"][1]["verbs"][0], "list");
  const std::vector<json> accounts = {
      json::parse(R"({"metadata": {"name": "argocd-server",
          "labels": {"app.kubernetes.io/part-of": "argocd"}}})"),
      json::parse(R"({"metadata": {"name": "argocd-applicationset-controller",
          "labels": {"app.kubernetes.io/part-of": "argocd"}}})"),
      json::parse(R"({"metadata": {"name": "x-applicationset-controller",
          "labels": {"app.kubernetes.io/part-of": "argocd-applicationset"}}})")};
  EXPECT_EQ(PickAppSetControllerServiceAccount(accounts), "x-applicationset-controller");
  EXPECT_EQ(PickAppSetControllerServiceAccount({accounts[0], accounts[1]}),
            "argocd-applicationset-controller");
  EXPECT_EQ(PickAppSetControllerServiceAccount({}), "openshift-gitops-applicationset-controller");
  const json binding = AppSetPlacementRoleBinding("argocd", "argocd-applicationset-controller");
  EXPECT_EQ(binding["subjects"][0]["name"], "argocd-applicationset-controller");
  EXPECT_EQ(binding["subjects"][0]["namespace"], "argocd");
  EXPECT_EQ(binding["roleRef"]["name"], "argocd-applicationset-controller-placement");
  EXPECT_TRUE(IsNonAcmClusterSecret(
      json::parse(R"({"metadata": {"labels": {"argocd.argoproj.io/secret-type": "cluster"}}})")));
  EXPECT_FALSE(IsNonAcmClusterSecret(json::parse(R"({"metadata": {"labels": {
      "argocd.argoproj.io/secret-type": "cluster",
      "apps.open-cluster-management.io/acm-cluster": "true"}}})")));
}

}  // namespace
}  // namespace mmi::dispatcher
