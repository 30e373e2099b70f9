#include "tools/fleet-sim/application_status.h"

#include <gtest/gtest.h>

namespace mmi::fleet_sim {
namespace {

using nlohmann::json;

json Manifest() {
  return json::parse(R"({
    "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
    "metadata": {"name": "guestbook-cluster1", "namespace": "openshift-gitops"},
    "spec": {"destination": {"namespace": "guestbook", "server": "https://kubernetes.default.svc"},
             "project": "default",
             "source": {"path": "guestbook", "repoURL": "https://example.com/apps.git",
                        "targetRevision": "HEAD"}}})");
}

cloudevents::Timestamp At(std::int64_t unix_seconds) {
  return cloudevents::Timestamp(std::chrono::seconds(unix_seconds));
}

TEST(ApplicationStatusTest, ReportsSyncHealthResourcesAndComparedTo) {
  ApplicationRuntime runtime;
  runtime.reconciled_at = At(1'780'000'000) + std::chrono::milliseconds(750);
  const json status = ApplicationStatus(Manifest(), runtime);
  EXPECT_EQ(status["sync"]["status"], "Synced");
  EXPECT_EQ(status["health"]["status"], "Healthy");
  EXPECT_EQ(status["reconciledAt"], "2026-05-28T20:26:40Z");  // seconds precision
  EXPECT_EQ(status["controllerNamespace"], "openshift-gitops");
  EXPECT_EQ(status["sourceType"], "Directory");
  EXPECT_EQ(status["sync"]["comparedTo"]["source"]["repoURL"], "https://example.com/apps.git");
  EXPECT_EQ(status["sync"]["comparedTo"]["destination"]["server"],
            "https://kubernetes.default.svc");
  ASSERT_EQ(status["resources"].size(), 2u);
  EXPECT_EQ(status["resources"][0]["kind"], "Deployment");
  EXPECT_EQ(status["resources"][0]["namespace"], "guestbook");
  EXPECT_FALSE(status.contains("operationState"));
  EXPECT_FALSE(status.contains("history"));
}

TEST(ApplicationStatusTest, DriftShowsOnThePrimaryResource) {
  ApplicationRuntime runtime;
  runtime.sync_status = std::string(kSyncOutOfSync);
  runtime.health_status = std::string(kHealthDegraded);
  const json status = ApplicationStatus(Manifest(), runtime);
  EXPECT_EQ(status["sync"]["status"], "OutOfSync");
  EXPECT_EQ(status["health"]["status"], "Degraded");
  EXPECT_EQ(status["resources"][0]["status"], "OutOfSync");
  EXPECT_EQ(status["resources"][0]["health"]["status"], "Degraded");
  EXPECT_TRUE(status["resources"][0]["health"].contains("message"));
  EXPECT_EQ(status["resources"][1]["status"], "Synced");
}

TEST(ApplicationStatusTest, OperationStateEchoesTheOperation) {
  ApplicationRuntime runtime;
  runtime.last_operation = json{{"sync", {{"revision", "abc"}}}};
  runtime.operation_started_at = At(1'780'000'000);
  const json status = ApplicationStatus(Manifest(), runtime);
  ASSERT_TRUE(status.contains("operationState"));
  EXPECT_EQ(status["operationState"]["operation"]["sync"]["revision"], "abc");
  EXPECT_EQ(status["operationState"]["phase"], "Succeeded");
  EXPECT_EQ(status["operationState"]["startedAt"], "2026-05-28T20:26:40Z");
  EXPECT_EQ(status["operationState"]["syncResult"]["resources"].size(), 2u);
  EXPECT_EQ(status["history"].size(), 1u);
}

TEST(ApplicationStatusTest, RevisionIsDeterministicPerSource) {
  json other = Manifest();
  other["spec"]["source"]["targetRevision"] = "v2";
  EXPECT_EQ(SimulatedRevision(Manifest()), SimulatedRevision(Manifest()));
  EXPECT_NE(SimulatedRevision(Manifest()), SimulatedRevision(other));
  EXPECT_EQ(SimulatedRevision(Manifest()).size(), 40u);
}

TEST(ApplicationStatusTest, ToleratesAManifestWithoutSpec) {
  const json status = ApplicationStatus(json{{"kind", "Application"}}, ApplicationRuntime{});
  EXPECT_EQ(status["sync"]["status"], "Synced");
  EXPECT_EQ(status["resources"].size(), 2u);
}

}  // namespace
}  // namespace mmi::fleet_sim
