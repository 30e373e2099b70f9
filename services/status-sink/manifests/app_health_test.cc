#include "services/status-sink/manifests/app_health.h"

#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace mmi::status_sink {
namespace {

// A live Deployment of that health.
ManagedResource Live(HealthCode code, std::string kind = "Deployment", std::string group = "apps") {
  ManagedResource r;
  r.group = std::move(group);
  r.version = "v1";
  r.kind = std::move(kind);
  r.name = "r";
  r.live = true;
  r.live_health = ResourceHealth{.status = code, .message = ""};
  return r;
}

ManagedResource NotLive(std::string kind = "Deployment") {
  ManagedResource r = Live(HealthCode::kHealthy, std::move(kind));
  r.live = false;
  r.live_health.reset();
  return r;
}

ManagedResource NoHealth() {  // a live ConfigMap
  ManagedResource r = Live(HealthCode::kHealthy, "ConfigMap", "");
  r.live_health.reset();
  return r;
}

ManagedResource Hook(HealthCode code) {
  ManagedResource r = Live(code, "Job", "batch");
  r.hook = true;
  return r;
}

ManagedResource Skipped() {
  ManagedResource r = NotLive();
  r.skipped = true;
  return r;
}

ManagedResource Ignored(HealthCode code) {
  ManagedResource r = Live(code);
  r.ignore_health = true;
  return r;
}

ManagedResource ChildApp(HealthCode code) { return Live(code, "Application", "argoproj.io"); }

TEST(AggregateHealthTest, FollowsArgoCdsRules) {
  using enum HealthCode;
  struct Row {
    std::string what;
    std::vector<ManagedResource> resources;
    HealthCode want;
  };
  const std::vector<Row> rows = {
      {"no resources", {}, kHealthy},
      {"all healthy", {Live(kHealthy), Live(kHealthy)}, kHealthy},
      {"suspended beats healthy", {Live(kHealthy), Live(kSuspended)}, kSuspended},
      {"progressing beats suspended", {Live(kSuspended), Live(kProgressing)}, kProgressing},
      {"missing beats progressing", {Live(kProgressing), Live(kMissing)}, kMissing},
      {"degraded beats missing", {Live(kMissing), Live(kDegraded)}, kDegraded},
      {"unknown beats degraded", {Live(kDegraded), Live(kUnknown)}, kUnknown},
      {"order does not matter", {Live(kUnknown), Live(kHealthy), Live(kDegraded)}, kUnknown},
      {"a missing resource does not lower it", {Live(kHealthy), NotLive()}, kHealthy},
      {"nothing live is Missing", {NotLive(), NotLive("ConfigMap")}, kMissing},
      {"nothing live but worse stays", {NotLive()}, kMissing},
      {"kinds without health do not count", {NoHealth(), Live(kProgressing)}, kProgressing},
      {"only kinds without health", {NoHealth()}, kHealthy},
      {"hooks do not count", {Live(kHealthy), Hook(kDegraded)}, kHealthy},
      {"only hooks: no resources", {Hook(kDegraded)}, kHealthy},
      {"skipped do not count", {Skipped(), Live(kHealthy)}, kHealthy},
      {"only skipped: no resources", {Skipped()}, kHealthy},
      {"ignored health does not count", {Ignored(kDegraded), Live(kHealthy)}, kHealthy},
      {"ignored but live counts as present", {Ignored(kDegraded), NotLive()}, kHealthy},
      {"child app missing does not count", {ChildApp(kMissing), Live(kHealthy)}, kHealthy},
      {"child app unknown does not count", {ChildApp(kUnknown)}, kHealthy},
      {"child app degraded counts", {ChildApp(kDegraded), Live(kHealthy)}, kDegraded},
  };
  for (const Row& row : rows) {
    EXPECT_EQ(HealthName(AggregateHealth(row.resources)), HealthName(row.want)) << row.what;
  }
}

TEST(ShownHealthTest, ShowsMissingForAbsentResourcesAndNothingForExcludedOnes) {
  EXPECT_EQ(ShownHealth(NotLive("ConfigMap")),
            (ResourceHealth{.status = HealthCode::kMissing, .message = ""}));
  EXPECT_EQ(ShownHealth(Live(HealthCode::kDegraded))->status, HealthCode::kDegraded);
  EXPECT_EQ(ShownHealth(NoHealth()), std::nullopt);
  EXPECT_EQ(ShownHealth(Hook(HealthCode::kHealthy)), std::nullopt);
  EXPECT_EQ(ShownHealth(Skipped()), std::nullopt);
  EXPECT_EQ(ShownHealth(Ignored(HealthCode::kDegraded)), std::nullopt);
}

nlohmann::json WithAnnotations(nlohmann::json annotations) {
  return {{"apiVersion", "batch/v1"},
          {"kind", "Job"},
          {"metadata", {{"name", "migrate"}, {"annotations", std::move(annotations)}}}};
}

TEST(HookTest, ReadsArgoAndHelmHookAnnotations) {
  struct Row {
    nlohmann::json annotations;
    bool hook;
    bool skipped;
  };
  const std::vector<Row> rows = {
      {nlohmann::json::object(), false, false},
      {{{"argocd.argoproj.io/hook", "PreSync"}}, true, false},
      {{{"argocd.argoproj.io/hook", "PreSync, PostSync"}}, true, false},
      {{{"argocd.argoproj.io/hook", "Skip"}}, false, true},
      {{{"argocd.argoproj.io/hook", "PreSync, Skip"}}, false, true},
      {{{"helm.sh/hook", "pre-install"}}, true, false},
      {{{"helm.sh/hook", "crd-install"}}, false, false},
      {{{"argocd.argoproj.io/hook", "Skip"}, {"helm.sh/hook", "pre-install"}}, false, true},
  };
  for (const Row& row : rows) {
    const nlohmann::json manifest = WithAnnotations(row.annotations);
    EXPECT_EQ(IsHook(manifest), row.hook) << row.annotations;
    EXPECT_EQ(status_sink::IsSkipped(manifest), row.skipped) << row.annotations;
  }
}

}  // namespace
}  // namespace mmi::status_sink
