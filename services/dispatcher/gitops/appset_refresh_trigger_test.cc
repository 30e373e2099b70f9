// AppSetRefreshTrigger: the ApplicationSets reading a Placement refreshed when its decisions
// change, through the controller on a fake hub.
#include "services/dispatcher/gitops/appset_refresh_trigger.h"

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

class AppSetRefreshTriggerTest : public GitOpsClusterControllerTest {
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
    // A hub this controller has run on before: edge-1's cluster secret is there (its content is
    // brought up to date; it is not created).
    Create(Core("secrets"), {{"metadata", {{"name", SecretName("edge-1")}, {"namespace", kNs}}}});
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

TEST_F(AppSetRefreshTriggerTest, AJoinRefreshesExactlyTheApplicationSetsReadingThePlacement) {
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

TEST_F(AppSetRefreshTriggerTest, AFirstInstallRefreshesOnceItCreatedTheClusterSecrets) {
  // The PlacementDecisions were there before the controller (no change for it to see), but the
  // ApplicationSet controller could not use them without the secrets: refreshed once they exist,
  // not after the ApplicationSets' own requeue (found with Argo CD v3.2.11's controller: 178 s).
  ASSERT_TRUE(kube_.Delete(Core("secrets"), SecretName("edge-1"), {}).ok());
  StartController();
  ASSERT_TRUE(Eventually([&] { return Refreshed("direct") && Refreshed("nested"); }));
  EXPECT_TRUE(HasSecret("edge-1"));
  EXPECT_FALSE(Refreshed("other-placement"));
  EXPECT_FALSE(Refreshed("placementrule"));
  EXPECT_FALSE(Refreshed("clusters"));
  EXPECT_TRUE(Eventually([&] { return Refreshes("ok") == 2; }));
}

TEST_F(AppSetRefreshTriggerTest, AnApplicationSetIsRefreshedAtMostOncePerInterval) {
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

TEST_F(AppSetRefreshTriggerTest, WhenTurnedOffNoApplicationSetIsTouched) {
  settings_.refresh_application_sets = false;
  StartController();
  ASSERT_TRUE(Eventually([&] { return HasSecret("edge-1"); }));
  DecideClusters({"edge-1", "edge-2"});
  ASSERT_TRUE(Eventually([&] { return HasSecret("edge-2"); }));
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_EQ(AppSetPatches(), 0u);
  EXPECT_FALSE(Refreshed("direct"));
}

}  // namespace
}  // namespace mmi::dispatcher::testing
