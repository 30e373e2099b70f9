#include "services/dispatcher/gitops/gitops_cluster_controller.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "libs/common/log.h"
#include "libs/common/testing/fake_clock.h"
#include "libs/kube/testing/fake_kube_client.h"
#include "libs/kube_object/object.h"
#include "libs/transport/testing/metric_value.h"
#include "prometheus/registry.h"

namespace mmi::dispatcher {
namespace {

using kube::KubeTime;
using kube::ResourceRef;
using kube::testing::FakeKubeClient;
using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr char kNs[] = "openshift-gitops";

ResourceRef GitOpsClusters(const std::string& ns = kNs) {
  return {"apps.open-cluster-management.io", "v1beta1", "gitopsclusters", ns};
}
ResourceRef Decisions(const std::string& ns = kNs) {
  return {"cluster.open-cluster-management.io", "v1beta1", "placementdecisions", ns};
}
ResourceRef Placements(const std::string& ns = kNs) {
  return {"cluster.open-cluster-management.io", "v1beta1", "placements", ns};
}
ResourceRef ManagedClusters() {
  return {"cluster.open-cluster-management.io", "v1", "managedclusters", ""};
}
ResourceRef Core(const char* resource, const std::string& ns = kNs) {
  return {"", "v1", resource, ns};
}
ResourceRef Rbac(const char* resource) {
  return {"rbac.authorization.k8s.io", "v1", resource, kNs};
}

std::string SecretName(const std::string& cluster) {
  return cluster + "-application-manager-cluster-secret";
}

json ExampleGitOpsCluster() {
  return json::parse(R"({
    "apiVersion": "apps.open-cluster-management.io/v1beta1", "kind": "GitOpsCluster",
    "metadata": {"name": "argo-pull", "namespace": "openshift-gitops"},
    "spec": {"argoServer": {"argoNamespace": "openshift-gitops"},
             "placementRef": {"kind": "Placement",
                              "apiVersion": "cluster.open-cluster-management.io/v1beta1",
                              "name": "all-clusters"},
             "createBlankClusterSecrets": true}
  })");
}

json Decision(const std::string& name, const std::string& placement,
              const std::vector<std::string>& clusters) {
  json d = {{"apiVersion", "cluster.open-cluster-management.io/v1beta1"},
            {"kind", "PlacementDecision"},
            {"metadata",
             {{"name", name}, {"namespace", kNs}, {"labels", {{kPlacementLabel, placement}}}}},
            {"status", {{"decisions", json::array()}}}};
  for (const auto& c : clusters) {
    d["status"]["decisions"].push_back({{"clusterName", c}, {"reason", ""}});
  }
  return d;
}

json ManagedCluster(const std::string& name) {
  return {
      {"apiVersion", "cluster.open-cluster-management.io/v1"},
      {"kind", "ManagedCluster"},
      {"metadata",
       {{"name", name},
        {"labels", {{"cluster.open-cluster-management.io/clusterset", "edge"}, {"name", name}}}}},
      {"spec", {{"hubAcceptsClient", true}}}};
}

// Polls a condition the controller's threads make true (informers and the loop run on their own
// threads even with a fake client); fails after a deadline.
bool Eventually(const std::function<bool()>& condition, milliseconds timeout = seconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) {
      return false;
    }
    std::this_thread::sleep_for(milliseconds(2));
  }
  return true;
}

double MetricValue(const prometheus::Registry& registry, const std::string& name,
                   const std::map<std::string, std::string>& labels = {}) {
  return transport::testing::MetricValue(registry, name, labels);
}

class GitOpsClusterControllerTest : public ::testing::Test {
 protected:
  GitOpsClusterControllerTest() {
    log::SetMinLevel(std::getenv("GC_DEBUG") != nullptr ? log::Level::kDebug : log::Level::kError);
    settings_.timer_check_interval = milliseconds(2);
  }
  ~GitOpsClusterControllerTest() override {
    if (controller_ != nullptr) {
      controller_->Stop();
    }
  }

  void Create(const ResourceRef& ref, const json& object) {
    auto created = kube_.Create(ref, object, {});
    ASSERT_TRUE(created.ok()) << created.status();
  }

  // The hub of the example: Argo CD server Service, Placement, three ManagedClusters.
  void CreateHub() {
    Create(Core("namespaces", ""), {{"metadata", {{"name", kNs}}}});
    Create(Core("services"), {{"metadata",
                               {{"name", "openshift-gitops-server"},
                                {"namespace", kNs},
                                {"labels",
                                 {{"app.kubernetes.io/component", "server"},
                                  {"app.kubernetes.io/part-of", "argocd"}}}}}});
    Create(Placements(), {{"metadata", {{"name", "all-clusters"}, {"namespace", kNs}}}});
    for (const char* c : {"edge-1", "edge-2", "edge-3"}) {
      Create(ManagedClusters(), ManagedCluster(c));
    }
  }

  void StartController() {
    controller_ = std::make_unique<GitOpsClusterController>(kube_, clock_, settings_, registry_);
    ASSERT_TRUE(controller_->Start().ok());
    ASSERT_TRUE(Eventually([&] { return controller_->synced(); }));
  }

  bool HasSecret(const std::string& cluster) {
    return kube_.Get(Core("secrets"), SecretName(cluster)).ok();
  }

  json GitOpsStatus(const std::string& name = "argo-pull") {
    auto g = kube_.Get(GitOpsClusters(), name);
    return g.ok() ? g->value("status", json::object()) : json::object();
  }
  std::string Condition(const std::string& type, const char* field = "status",
                        const std::string& name = "argo-pull") {
    const json status = GitOpsStatus(name);
    for (const auto& c : status.value("conditions", json::array())) {
      if (c.value("type", "") == type) {
        return c.value(field, "");
      }
    }
    return "";
  }
  double Reconciles(const std::string& result) {
    return MetricValue(registry_, "mmi_gitopscluster_reconciles_total", {{"result", result}});
  }
  size_t StatusPatches() {
    size_t n = 0;
    for (const auto& call : kube_.Calls()) {
      n += call.verb == "PATCH" && call.ref.resource == "gitopsclusters" ? 1 : 0;
    }
    return n;
  }

  FakeKubeClient kube_;
  testing::FakeClock clock_;
  prometheus::Registry registry_;
  GitOpsClusterControllerSettings settings_;
  std::unique_ptr<GitOpsClusterController> controller_;
};

TEST_F(GitOpsClusterControllerTest, DecisionsBecomeBlankClusterSecretsAndTheDuckTypeConfigMap) {
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

TEST_F(GitOpsClusterControllerTest, ReadsEveryPageOfEveryPlacementDecision) {
  settings_.decision_page_size = 1;
  CreateHub();
  Create(Decisions(), Decision("all-clusters-decision-1", "all-clusters", {"edge-1"}));
  Create(Decisions(),
         Decision("all-clusters-decision-2", "all-clusters", {"edge-2", "edge-3", ""}));
  Create(Decisions(), Decision("other-decision-1", "other", {"edge-9"}));
  Create(GitOpsClusters(), ExampleGitOpsCluster());
  StartController();

  ASSERT_TRUE(Eventually([&] { return Condition(kCondReady) == "True"; })) << GitOpsStatus();
  EXPECT_TRUE(HasSecret("edge-1"));
  EXPECT_TRUE(HasSecret("edge-2"));
  EXPECT_TRUE(HasSecret("edge-3"));
  EXPECT_FALSE(HasSecret("edge-9"));
  // Two pages, the second asked for with the first page's continue token.
  bool continued = false;
  for (const auto& call : kube_.Calls()) {
    continued |= call.verb == "LIST" && call.ref.resource == "placementdecisions" &&
                 call.ref.namespace_name == kNs && !call.detail.empty();
  }
  EXPECT_TRUE(continued);
  EXPECT_NE(Condition(kCondPlacementResolved, "message").find("3 managed cluster(s) in 2"),
            std::string::npos)
      << GitOpsStatus();
}

TEST_F(GitOpsClusterControllerTest, ClusterDroppedFromTheDecisionsLosesItsSecretWhenConfigured) {
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

TEST_F(GitOpsClusterControllerTest, ByDefaultAnUndecidedClusterKeepsItsSecretUntilItIsGone) {
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

TEST_F(GitOpsClusterControllerTest, MissingArgoServerOrPlacementIsReported) {
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

TEST_F(GitOpsClusterControllerTest, ArgoNamespaceOfAnotherNamespaceMustBeAuthorised) {
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

TEST_F(GitOpsClusterControllerTest, DeletedGitOpsClusterStopsManagingAndLeavesSecretsByDefault) {
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

TEST_F(GitOpsClusterControllerTest, DeletedGitOpsClusterTakesItsSecretsWhenFollowingDecisions) {
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

TEST_F(GitOpsClusterControllerTest, StatusIsPatchedOnlyWhenItChanges) {
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

TEST_F(GitOpsClusterControllerTest, FollowsManagedClusterLabelsAndRecreatesDeletedSecrets) {
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

TEST_F(GitOpsClusterControllerTest, RenamedSecretReplacesTheOldOneForTheSameCluster) {
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

TEST_F(GitOpsClusterControllerTest, MissingManagedClusterFailsResolutionUntilItExists) {
  CreateHub();
  Create(Decisions(), Decision("all-clusters-decision-1", "all-clusters", {"edge-1", "edge-7"}));
  Create(GitOpsClusters(), ExampleGitOpsCluster());
  StartController();
  ASSERT_TRUE(Eventually([&] { return Condition(kCondPlacementResolved) == "False"; }));
  EXPECT_NE(Condition(kCondPlacementResolved, "message").find("edge-7"), std::string::npos);
  EXPECT_FALSE(HasSecret("edge-1"));

  Create(ManagedClusters(), ManagedCluster("edge-7"));
  EXPECT_TRUE(Eventually([&] { return HasSecret("edge-1") && HasSecret("edge-7"); }));
  EXPECT_TRUE(Eventually([&] { return Condition(kCondReady) == "True"; }));
}

TEST_F(GitOpsClusterControllerTest, ForeignArgoCdClusterSecretBlocksThatClusterOnly) {
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

ResourceRef AppSets() { return {"argoproj.io", "v1alpha1", "applicationsets", kNs}; }

// An ApplicationSet with `generator` as its only generator.
json AppSet(const std::string& name, const json& generator) {
  return {{"apiVersion", "argoproj.io/v1alpha1"},
          {"kind", "ApplicationSet"},
          {"metadata", {{"name", name}, {"namespace", kNs}}},
          {"spec", {{"generators", json::array({generator})}, {"template", json::object()}}}};
}

json DecisionResource(const std::string& configmap, const json& selector) {
  return {
      {"clusterDecisionResource",
       {{"configMapRef", configmap}, {"labelSelector", selector}, {"requeueAfterSeconds", 180}}}};
}

class AppSetRefreshTest : public GitOpsClusterControllerTest {
 protected:
  void SetUp() override {
    CreateHub();
    Create(Decisions(), Decision("all-clusters-decision-1", "all-clusters", {"edge-1"}));
    Create(GitOpsClusters(), ExampleGitOpsCluster());
    const json by_placement = {{"matchLabels", {{kPlacementLabel, "all-clusters"}}}};
    // Reads the decisions directly, and nested in a matrix.
    Create(AppSets(), AppSet("direct", DecisionResource("acm-placement", by_placement)));
    Create(
        AppSets(),
        AppSet("nested",
               {{"matrix",
                 {{"generators",
                   json::array({DecisionResource("acm-placement",
                                                 {{"matchExpressions",
                                                   json::array({{{"key", kPlacementLabel},
                                                                 {"operator", "In"},
                                                                 {"values", {"all-clusters"}}}})}}),
                                {{"list", {{"elements", json::array()}}}}})}}}}));
    // Not reading them: another Placement, the legacy duck type, a clusters generator.
    Create(AppSets(), AppSet("other-placement",
                             DecisionResource("acm-placement",
                                              {{"matchLabels", {{kPlacementLabel, "other"}}}})));
    Create(AppSets(), AppSet("placementrule", DecisionResource("acm-placementrule", by_placement)));
    Create(AppSets(), AppSet("clusters", {{"clusters", json::object()}}));
  }

  void DecideClusters(const std::vector<std::string>& clusters) {
    json decisions = json::array();
    for (const auto& c : clusters) {
      decisions.push_back({{"clusterName", c}, {"reason", ""}});
    }
    auto patched = kube_.Patch(Decisions(), "all-clusters-decision-1", kube::PatchType::kMerge,
                               {{"status", {{"decisions", decisions}}}}, {}, "status");
    ASSERT_TRUE(patched.ok()) << patched.status();
  }
  bool Refreshed(const std::string& appset) {
    auto a = kube_.Get(AppSets(), appset);
    return a.ok() && (*a)["metadata"]
                             .value("annotations", json::object())
                             .value(kAppSetRefreshAnnotation, "") == "true";
  }
  // What the ApplicationSet controller does once it has reconciled.
  void ClearRefresh(const std::string& appset) {
    auto patched = kube_.Patch(
        AppSets(), appset, kube::PatchType::kMerge,
        {{"metadata", {{"annotations", {{kAppSetRefreshAnnotation, nullptr}}}}}}, {}, "");
    ASSERT_TRUE(patched.ok()) << patched.status();
  }
  // The controller's refresh patches (not the test's own ClearRefresh).
  size_t AppSetPatches() {
    // "/" in the annotation key is "~1" in a JSON pointer.
    const json::json_pointer refresh(
        "/metadata/annotations/argocd.argoproj.io~1application-set-refresh");
    size_t n = 0;
    for (const auto& call : kube_.Calls()) {
      if (call.verb == "PATCH" && call.ref.resource == "applicationsets" &&
          call.body.contains(refresh) && call.body.at(refresh) == "true") {
        ++n;
      }
    }
    return n;
  }
  double Refreshes(const std::string& result) {
    return MetricValue(registry_, "mmi_gitopscluster_appset_refreshes_total", {{"result", result}});
  }
};

TEST_F(AppSetRefreshTest, AJoinRefreshesExactlyTheApplicationSetsReadingThePlacement) {
  StartController();
  ASSERT_TRUE(Eventually([&] { return HasSecret("edge-1"); }));
  EXPECT_EQ(AppSetPatches(), 0u) << "the start-up reconcile is not a change of decisions";

  DecideClusters({"edge-1", "edge-2"});
  ASSERT_TRUE(Eventually([&] { return Refreshed("direct") && Refreshed("nested"); }));
  EXPECT_TRUE(HasSecret("edge-2")) << "refreshed only once the generator can see the cluster";
  EXPECT_FALSE(Refreshed("other-placement"));
  EXPECT_FALSE(Refreshed("placementrule"));
  EXPECT_FALSE(Refreshed("clusters"));
  // Each refresh is followed by its Event, written on the loop thread right after the patch.
  const auto events = [&] {
    std::vector<json> out;
    for (const auto& call : kube_.Calls()) {
      if (call.verb == "CREATE" && call.ref.resource == "events") {
        out.push_back(call.body);
      }
    }
    return out;
  };
  ASSERT_TRUE(Eventually([&] { return events().size() == 2; })) << events().size();
  for (const json& event : events()) {
    EXPECT_EQ(event["reason"], "RefreshRequested");
    EXPECT_EQ(event["involvedObject"]["kind"], "ApplicationSet");
  }
  EXPECT_EQ(Refreshes("ok"), 2);

  // A leave refreshes them too.
  ClearRefresh("direct");
  ClearRefresh("nested");
  clock_.Advance(seconds(3));
  DecideClusters({"edge-2"});
  ASSERT_TRUE(Eventually([&] { return Refreshed("direct") && Refreshed("nested"); }));
  EXPECT_TRUE(Eventually([&] { return Refreshes("ok") == 4; }));
}

TEST_F(AppSetRefreshTest, AnApplicationSetIsRefreshedAtMostOncePerInterval) {
  settings_.appset_refresh.min_interval = seconds(10);
  StartController();
  ASSERT_TRUE(Eventually([&] { return HasSecret("edge-1"); }));
  DecideClusters({"edge-1", "edge-2"});
  ASSERT_TRUE(Eventually([&] { return AppSetPatches() == 2; }));  // "direct" and "nested"
  ClearRefresh("direct");
  const size_t after_first = AppSetPatches();

  DecideClusters({"edge-1", "edge-2", "edge-3"});
  ASSERT_TRUE(Eventually([&] { return HasSecret("edge-3"); }));
  std::this_thread::sleep_for(milliseconds(50));  // the loop has had its chance to refresh
  EXPECT_FALSE(Refreshed("direct")) << "inside the interval";
  EXPECT_EQ(AppSetPatches(), after_first);
  clock_.Advance(seconds(10));
  ASSERT_TRUE(Eventually([&] { return Refreshed("direct"); })) << "sent when the interval ended";
}

TEST_F(AppSetRefreshTest, WhenTurnedOffNoApplicationSetIsTouched) {
  settings_.refresh_application_sets = false;
  StartController();
  ASSERT_TRUE(Eventually([&] { return HasSecret("edge-1"); }));
  DecideClusters({"edge-1", "edge-2"});
  ASSERT_TRUE(Eventually([&] { return HasSecret("edge-2"); }));
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_EQ(AppSetPatches(), 0u);
  EXPECT_FALSE(Refreshed("direct"));
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
}  // namespace mmi::dispatcher
