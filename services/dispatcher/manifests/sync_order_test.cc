#include "services/dispatcher/manifests/sync_order.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace mmi::dispatcher::manifests {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;

json Object(const std::string& api_version, const std::string& kind, const std::string& name,
            const std::string& ns = "", json annotations = json::object()) {
  json m = {{"apiVersion", api_version}, {"kind", kind}, {"metadata", {{"name", name}}}};
  if (!ns.empty()) {
    m["metadata"]["namespace"] = ns;
  }
  if (!annotations.empty()) {
    m["metadata"]["annotations"] = std::move(annotations);
  }
  return m;
}

// "kind/name" of each manifest in sync order.
std::vector<std::string> Ordered(const std::vector<json>& manifests) {
  std::vector<std::string> out;
  for (const size_t i : SyncOrder(manifests)) {
    out.push_back(manifests[i]["kind"].get<std::string>() + "/" +
                  manifests[i]["metadata"]["name"].get<std::string>());
  }
  return out;
}

TEST(SyncOrderTest, KindsInHelmsInstallOrderAndCustomResourcesLast) {
  const std::vector<json> manifests = {
      Object("apps/v1", "Deployment", "web", "shop"),
      Object("example.com/v1", "Widget", "w", "shop"),
      Object("v1", "Service", "web", "shop"),
      Object("v1", "ConfigMap", "settings", "shop"),
      Object("v1", "ServiceAccount", "web", "shop"),
      Object("networking.k8s.io/v1", "Ingress", "web", "shop"),
  };
  EXPECT_THAT(Ordered(manifests),
              ElementsAre("ServiceAccount/web", "ConfigMap/settings", "Service/web",
                          "Deployment/web", "Ingress/web", "Widget/w"));
}

TEST(SyncOrderTest, NamesOrderObjectsOfOneKindAndEmptyInputGivesNothing) {
  EXPECT_THAT(Ordered({Object("v1", "ConfigMap", "b"), Object("v1", "ConfigMap", "a")}),
              ElementsAre("ConfigMap/a", "ConfigMap/b"));
  EXPECT_TRUE(SyncOrder({}).empty());
}

TEST(SyncOrderTest, WavesComeBeforeKindsAndPhasesBeforeWaves) {
  const std::vector<json> manifests = {
      Object("v1", "ConfigMap", "late", "", {{"argocd.argoproj.io/sync-wave", "5"}}),
      Object("apps/v1", "Deployment", "early", "", {{"argocd.argoproj.io/sync-wave", "-1"}}),
      Object("batch/v1", "Job", "migrate", "", {{"argocd.argoproj.io/hook", "PreSync"}}),
      Object("batch/v1", "Job", "notify", "", {{"argocd.argoproj.io/hook", "PostSync"}}),
      Object("batch/v1", "Job", "cleanup", "", {{"argocd.argoproj.io/hook", "SyncFail"}}),
      Object("v1", "Secret", "plain"),
  };
  EXPECT_THAT(Ordered(manifests), ElementsAre("Job/migrate", "Deployment/early", "Secret/plain",
                                              "ConfigMap/late", "Job/notify", "Job/cleanup"));
}

TEST(SyncOrderTest, ReadsWavesAndHooksAsArgoCdDoes) {
  const std::vector<json> manifests = {
      // Not an integer: wave 0, as strconv.Atoi fails on it.
      Object("v1", "ConfigMap", "bad-wave", "", {{"argocd.argoproj.io/sync-wave", "1x"}}),
      // Helm's hook weight when there is no sync-wave.
      Object("v1", "ConfigMap", "weighted", "", {{"helm.sh/hook-weight", "-2"}}),
      Object("v1", "ConfigMap", "plus", "", {{"argocd.argoproj.io/sync-wave", "+1"}}),
      // Helm hooks map to phases; an Argo CD hook annotation wins over them.
      Object("v1", "Pod", "helm-pre", "", {{"helm.sh/hook", "pre-install,pre-upgrade"}}),
      Object("v1", "Pod", "helm-post", "", {{"helm.sh/hook", "post-install"}}),
      Object("v1", "Pod", "argo-wins", "",
             {{"argocd.argoproj.io/hook", "Sync"}, {"helm.sh/hook", "pre-install"}}),
      // The first hook type it names that is one.
      Object("v1", "Pod", "several", "", {{"argocd.argoproj.io/hook", "Nonsense, PostSync"}}),
  };
  EXPECT_THAT(Ordered(manifests),
              ElementsAre("Pod/helm-pre", "ConfigMap/weighted", "ConfigMap/bad-wave",
                          "Pod/argo-wins", "ConfigMap/plus", "Pod/helm-post", "Pod/several"));
}

TEST(SyncOrderTest, ANamespaceMovesBeforeTheFirstObjectInIt) {
  const std::vector<json> manifests = {
      // A wave puts the namespace after its objects; it moves up to the first of them.
      Object("v1", "Namespace", "shop", "", {{"argocd.argoproj.io/sync-wave", "3"}}),
      Object("v1", "ConfigMap", "settings", "shop"),
      Object("v1", "ConfigMap", "elsewhere", "other"),
      Object("apps/v1", "Deployment", "web", "shop"),
  };
  EXPECT_THAT(Ordered(manifests), ElementsAre("ConfigMap/elsewhere", "Namespace/shop",
                                              "ConfigMap/settings", "Deployment/web"));
}

TEST(SyncOrderTest, ACrdMovesBeforeTheFirstObjectOfItsKind) {
  json crd = Object("apiextensions.k8s.io/v1", "CustomResourceDefinition", "widgets.example.com",
                    "", {{"argocd.argoproj.io/sync-wave", "2"}});
  crd["spec"] = {{"group", "example.com"}, {"names", {{"kind", "Widget"}, {"plural", "widgets"}}}};
  const std::vector<json> manifests = {
      crd,
      Object("example.com/v1", "Widget", "w", "", {{"argocd.argoproj.io/sync-wave", "1"}}),
      Object("v1", "ConfigMap", "first"),
  };
  EXPECT_THAT(
      Ordered(manifests),
      ElementsAre("ConfigMap/first", "CustomResourceDefinition/widgets.example.com", "Widget/w"));
}

TEST(SyncOrderTest, ObjectsWithoutMetadataStillSort) {
  const std::vector<json> manifests = {json{{"kind", "Deployment"}}, json{{"kind", "Namespace"}},
                                       json::object()};
  EXPECT_THAT(SyncOrder(manifests), ElementsAre(1, 0, 2));
}

}  // namespace
}  // namespace mmi::dispatcher::manifests
