// Test support: a fake hub (FakeKubeClient) with the objects of the hub-apis.md §4 example, and
// a GitOpsClusterController started on it with a fake clock. The controller's collaborators are
// tested through it: its informers and loop run on their own threads, so tests wait for
// conditions with Eventually().
#pragma once

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
#include "services/dispatcher/gitops/gitops_cluster.h"
#include "services/dispatcher/gitops/gitops_cluster_controller.h"

namespace mmi::dispatcher::testing {

using kube::KubeTime;
using kube::ResourceRef;
using kube::testing::FakeKubeClient;
using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

inline constexpr char kNs[] = "openshift-gitops";

inline ResourceRef GitOpsClusters(const std::string& ns = kNs) {
  return {"apps.open-cluster-management.io", "v1beta1", "gitopsclusters", ns};
}
inline ResourceRef Decisions(const std::string& ns = kNs) {
  return {"cluster.open-cluster-management.io", "v1beta1", "placementdecisions", ns};
}
inline ResourceRef Placements(const std::string& ns = kNs) {
  return {"cluster.open-cluster-management.io", "v1beta1", "placements", ns};
}
inline ResourceRef ManagedClusters() {
  return {"cluster.open-cluster-management.io", "v1", "managedclusters", ""};
}
inline ResourceRef Core(const char* resource, const std::string& ns = kNs) {
  return {"", "v1", resource, ns};
}
inline ResourceRef Rbac(const char* resource) {
  return {"rbac.authorization.k8s.io", "v1", resource, kNs};
}

inline std::string SecretName(const std::string& cluster) {
  return cluster + "-application-manager-cluster-secret";
}

inline json ExampleGitOpsCluster() {
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

inline json Decision(const std::string& name, const std::string& placement,
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

inline json ManagedCluster(const std::string& name) {
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
inline bool Eventually(const std::function<bool()>& condition, milliseconds timeout = seconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) {
      return false;
    }
    std::this_thread::sleep_for(milliseconds(2));
  }
  return true;
}

inline double MetricValue(const prometheus::Registry& registry, const std::string& name,
                          const std::map<std::string, std::string>& labels = {}) {
  return transport::testing::MetricValue(registry, name, labels);
}

class GitOpsHubTest : public ::testing::Test {
 protected:
  GitOpsHubTest() {
    log::SetMinLevel(std::getenv("GC_DEBUG") != nullptr ? log::Level::kDebug : log::Level::kError);
    settings_.timer_check_interval = milliseconds(2);
  }
  ~GitOpsHubTest() override {
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
  mmi::testing::FakeClock clock_;
  prometheus::Registry registry_;
  GitOpsClusterControllerSettings settings_;
  std::unique_ptr<GitOpsClusterController> controller_;
};

}  // namespace mmi::dispatcher::testing
