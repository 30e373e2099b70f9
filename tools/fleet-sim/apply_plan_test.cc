#include "tools/fleet-sim/apply_plan.h"

#include <gtest/gtest.h>

#include <string>

namespace mmi::fleet_sim {
namespace {

using cloudevents::ManifestBundle;
using nlohmann::json;

json Object(std::string api_version, std::string kind, std::string name, std::string ns) {
  json meta = {{"name", name}};
  if (!ns.empty()) {
    meta["namespace"] = ns;
  }
  return {{"apiVersion", api_version}, {"kind", kind}, {"metadata", meta}};
}

TEST(GuessResourceTest, PluralisesKindsAsKubectlGuesses) {
  const struct {
    const char* kind;
    const char* resource;
  } cases[] = {{"Deployment", "deployments"},        {"Ingress", "ingresses"},
               {"NetworkPolicy", "networkpolicies"}, {"Gateway", "gateways"},
               {"Application", "applications"},      {"ConfigMap", "configmaps"},
               {"Namespace", "namespaces"},          {"Mesh", "meshes"}};
  for (const auto& c : cases) {
    EXPECT_EQ(GuessResource(c.kind), c.resource) << c.kind;
  }
}

TEST(PlanBundleTest, TakesEachManifestsStrategyFromItsConfig) {
  ManifestBundle bundle;
  bundle.manifests = {Object("argoproj.io/v1alpha1", "Application", "app", "argocd"),
                      Object("v1", "ConfigMap", "cm", "demo"),
                      Object("v1", "Namespace", "demo", ""),
                      Object("apps/v1", "Deployment", "web", "demo")};
  cloudevents::ManifestConfigOption ssa;
  ssa.resource_identifier = {"argoproj.io", "applications", "app", "argocd"};
  ssa.update_strategy = cloudevents::UpdateStrategy{
      "ServerSideApply", cloudevents::ServerSideApplyConfig{true, "argocd-pull-integration", {}}};
  ssa.feedback_rules = {{"JSONPaths", {{"status", std::nullopt, ".status"}}}};
  cloudevents::ManifestConfigOption create_only;
  create_only.resource_identifier = {"", "configmaps", "cm", "demo"};
  create_only.update_strategy = cloudevents::UpdateStrategy{"CreateOnly", std::nullopt};
  cloudevents::ManifestConfigOption ssa_default;
  ssa_default.resource_identifier = {"apps", "deployments", "web", "demo"};
  ssa_default.update_strategy = cloudevents::UpdateStrategy{"ServerSideApply", std::nullopt};
  bundle.manifest_configs = {ssa, create_only, ssa_default};

  auto plan = PlanBundle(bundle);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->manifests.size(), 4u);
  const ManifestPlan& app = plan->manifests[0];
  EXPECT_EQ(app.mode, WriteMode::kServerSideApply);
  EXPECT_EQ(app.field_manager, "argocd-pull-integration");
  EXPECT_TRUE(app.force);
  EXPECT_EQ(app.ref, (kube::ResourceRef{"argoproj.io", "v1alpha1", "applications", "argocd"}));
  ASSERT_EQ(app.feedback_rules.size(), 1u);
  EXPECT_EQ(plan->manifests[1].mode, WriteMode::kCreateOnly);
  EXPECT_EQ(plan->manifests[2].mode, WriteMode::kUpdate);  // no config: the agent's default
  EXPECT_EQ(plan->manifests[2].ref, (kube::ResourceRef{"", "v1", "namespaces", ""}));
  EXPECT_EQ(plan->manifests[3].mode, WriteMode::kServerSideApply);
  EXPECT_EQ(plan->manifests[3].field_manager, kDefaultFieldManager);
  EXPECT_FALSE(plan->manifests[3].force);
  for (const ManifestPlan& m : plan->manifests) {
    EXPECT_FALSE(m.orphan_on_delete);  // no delete option: Foreground
  }
}

TEST(PlanBundleTest, HashesWhatItAppliesWhenFieldsAreIgnored) {
  ManifestBundle bundle;
  nlohmann::json app = Object("argoproj.io/v1alpha1", "Application", "app", "argocd");
  app["operation"] = {{"sync", {{"revision", "HEAD"}}}};
  app["spec"] = {{"project", "default"}, {"replicas", 3}};
  bundle.manifests = {app};
  cloudevents::ManifestConfigOption ssa;
  ssa.resource_identifier = {"argoproj.io", "applications", "app", "argocd"};
  cloudevents::IgnoreField on_change{"OnSpokeChange", {".operation"}, {}, {}};
  cloudevents::IgnoreField on_present{"OnSpokePresent", {".spec.replicas"}, {}, {}};
  ssa.update_strategy = cloudevents::UpdateStrategy{
      "ServerSideApply",
      cloudevents::ServerSideApplyConfig{false, std::nullopt, {on_change, on_present}}};
  bundle.manifest_configs = {ssa};

  auto plan = PlanBundle(bundle);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const ManifestPlan& m = plan->manifests[0];
  ASSERT_FALSE(m.config_spec_hash.empty());
  for (const nlohmann::json* manifest : {&m.manifest, &m.manifest_when_present}) {
    EXPECT_EQ((*manifest)["metadata"]["annotations"][std::string(kConfigSpecHashAnnotation)],
              m.config_spec_hash);
    EXPECT_TRUE(manifest->contains("operation"));  // OnSpokeChange fields are applied and hashed
  }
  EXPECT_EQ(m.manifest["spec"]["replicas"], 3);                        // created with it
  EXPECT_FALSE(m.manifest_when_present["spec"].contains("replicas"));  // then left to the spoke

  // Another operation is another hash (applied again); the same bundle is the same hash.
  bundle.manifests[0]["operation"]["sync"]["revision"] = "v2";
  EXPECT_NE(PlanBundle(bundle)->manifests[0].config_spec_hash, m.config_spec_hash);
  bundle.manifests[0] = app;
  EXPECT_EQ(PlanBundle(bundle)->manifests[0].config_spec_hash, m.config_spec_hash);
}

TEST(RemoveJsonPathTest, RemovesDottedAndQuotedMembers) {
  nlohmann::json o = {
      {"metadata", {{"annotations", {{"argocd.argoproj.io/refresh", "hard"}, {"keep", "1"}}}}},
      {"operation", {{"sync", nlohmann::json::object()}}}};
  RemoveJsonPath(o, ".metadata.annotations[\"argocd.argoproj.io/refresh\"]");
  RemoveJsonPath(o, ".operation");
  RemoveJsonPath(o, ".missing.member");
  RemoveJsonPath(o, "not a path");
  EXPECT_EQ(o, (nlohmann::json{{"metadata", {{"annotations", {{"keep", "1"}}}}}}));
}

TEST(PlanBundleTest, FollowsTheDeleteOption) {
  const struct {
    const char* policy;
    bool with_rule;
    bool cm_orphaned;
    bool ns_orphaned;
  } cases[] = {{"Foreground", false, false, false},
               {"Orphan", false, true, true},
               {"SelectivelyOrphan", true, true, false},
               {"SelectivelyOrphan", false, false, false}};
  for (const auto& c : cases) {
    ManifestBundle bundle;
    bundle.manifests = {Object("v1", "ConfigMap", "cm", "demo"),
                        Object("v1", "Namespace", "demo", "")};
    cloudevents::DeleteOption option;
    option.propagation_policy = c.policy;
    if (c.with_rule) {
      option.orphaning_rules =
          std::vector<cloudevents::ResourceIdentifier>{{"", "configmaps", "cm", "demo"}};
    }
    bundle.delete_option = option;
    auto plan = PlanBundle(bundle);
    ASSERT_TRUE(plan.ok()) << plan.status();
    EXPECT_EQ(plan->manifests[0].orphan_on_delete, c.cm_orphaned) << c.policy;
    EXPECT_EQ(plan->manifests[1].orphan_on_delete, c.ns_orphaned) << c.policy;
  }
}

// OCM's owner-reference rule (apply_plan.h): an update deletes a dropped object only when it
// still carries the agent's owner reference, i.e. when the plan it was last applied under did
// not orphan it (the hand-over from manifests to an Application relies on it, ADR 0007).
TEST(DroppedToDeleteTest, DeletesOnlyDroppedObjectsThatStillCarryTheOwnerReference) {
  auto plan = [](const char* policy, std::vector<json> manifests,
                 std::vector<cloudevents::ResourceIdentifier> rules = {}) {
    ManifestBundle bundle;
    bundle.manifests = std::move(manifests);
    if (policy != nullptr) {
      cloudevents::DeleteOption option;
      option.propagation_policy = policy;
      if (!rules.empty()) {
        option.orphaning_rules = rules;
      }
      bundle.delete_option = option;
    }
    return PlanBundle(bundle).value();
  };
  const json cm = Object("v1", "ConfigMap", "cm", "demo");
  const json deploy = Object("apps/v1", "Deployment", "web", "demo");
  const struct {
    const char* name;
    ApplyPlan applied;
    ApplyPlan next;
    std::vector<std::string> deleted;
  } cases[] = {
      {"Foreground, both dropped",
       plan("Foreground", {cm, deploy}),
       plan("Foreground", {}),
       {"cm", "web"}},
      {"no delete option (Foreground), one kept",
       plan(nullptr, {cm, deploy}),
       plan(nullptr, {deploy}),
       {"cm"}},
      {"applied under Orphan, then dropped",
       plan("Orphan", {cm, deploy}),
       plan("Foreground", {}),
       {}},
      {"applied under Orphan, dropped under Orphan",
       plan("Orphan", {cm, deploy}),
       plan("Orphan", {}),
       {}},
      {"selectively orphaned ConfigMap",
       plan("SelectivelyOrphan", {cm, deploy}, {{"", "configmaps", "cm", "demo"}}),
       plan("Foreground", {}),
       {"web"}},
      {"nothing dropped", plan("Foreground", {cm, deploy}), plan("Orphan", {deploy, cm}), {}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<std::string> deleted;
    for (const ManifestPlan& m : DroppedToDelete(c.applied, c.next)) {
      deleted.push_back(m.name);
    }
    EXPECT_EQ(deleted, c.deleted);
  }
  // A ReadOnly manifest is never owned: neither dropped nor deleted with the work.
  ManifestBundle read_only;
  read_only.manifests = {cm};
  cloudevents::ManifestConfigOption config;
  config.resource_identifier = {"", "configmaps", "cm", "demo"};
  config.update_strategy =
      cloudevents::UpdateStrategy{.type = "ReadOnly", .server_side_apply = std::nullopt};
  read_only.manifest_configs = {config};
  const ApplyPlan observed = PlanBundle(read_only).value();
  EXPECT_FALSE(CarriesOwnerReference(observed.manifests[0]));
  EXPECT_TRUE(DroppedToDelete(observed, ApplyPlan{}).empty());
}

// What Argo CD renders for one app often names a ConfigMap, a Service and a Deployment alike:
// each manifest takes the config of its own resource, as the agent's RESTMapper matches them.
TEST(PlanBundleTest, MatchesConfigsByResourceToo) {
  ManifestBundle bundle;
  bundle.manifests = {Object("v1", "ConfigMap", "web", "demo"),
                      Object("v1", "Service", "web", "demo"),
                      Object("example.com/v1", "Octopus", "web", "demo")};
  cloudevents::ManifestConfigOption configmap;
  configmap.resource_identifier = {"", "configmaps", "web", "demo"};
  configmap.update_strategy = cloudevents::UpdateStrategy{"CreateOnly", std::nullopt};
  cloudevents::ManifestConfigOption service;
  service.resource_identifier = {"", "services", "web", "demo"};
  service.update_strategy = cloudevents::UpdateStrategy{"ServerSideApply", std::nullopt};
  // An irregular plural kubectl's guess ("octopuses") misses: the only config naming it.
  cloudevents::ManifestConfigOption octopus;
  octopus.resource_identifier = {"example.com", "octopi", "web", "demo"};
  bundle.manifest_configs = {configmap, service, octopus};

  auto plan = PlanBundle(bundle);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->manifests.size(), 3u);
  EXPECT_EQ(plan->manifests[0].ref.resource, "configmaps");
  EXPECT_EQ(plan->manifests[0].mode, WriteMode::kCreateOnly);
  EXPECT_EQ(plan->manifests[1].ref.resource, "services");
  EXPECT_EQ(plan->manifests[1].mode, WriteMode::kServerSideApply);
  EXPECT_EQ(plan->manifests[2].ref.resource, "octopi");

  // Two configs naming the object, neither with the guessed resource: neither is taken.
  bundle.manifests = {Object("example.com/v1", "Octopus", "web", "demo")};
  cloudevents::ManifestConfigOption other = octopus;
  other.resource_identifier.resource = "octopodes";
  bundle.manifest_configs = {octopus, other};
  plan = PlanBundle(bundle);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->manifests[0].ref.resource, "octopuses");
}

TEST(PlanBundleTest, RejectsUnnamedManifestsAndUnknownStrategies) {
  ManifestBundle unnamed;
  unnamed.manifests = {json{{"apiVersion", "v1"}, {"kind", "ConfigMap"}}};
  EXPECT_TRUE(absl::IsInvalidArgument(PlanBundle(unnamed).status()));

  ManifestBundle unknown;
  unknown.manifests = {Object("v1", "ConfigMap", "cm", "demo")};
  cloudevents::ManifestConfigOption config;
  config.resource_identifier = {"", "configmaps", "cm", "demo"};
  config.update_strategy = cloudevents::UpdateStrategy{"Replace", std::nullopt};
  unknown.manifest_configs = {config};
  auto plan = PlanBundle(unknown);
  EXPECT_TRUE(absl::IsInvalidArgument(plan.status()));
  EXPECT_NE(plan.status().message().find("manifests[0]"), std::string::npos);
}

}  // namespace
}  // namespace mmi::fleet_sim
