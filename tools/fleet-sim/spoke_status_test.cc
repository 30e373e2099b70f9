// BuildSpokeStatus against what the real work agent reported
// (../shared/spec/samples/captured/agentevents.jsonl): the same input gives the same status.
#include "tools/fleet-sim/spoke_status.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "libs/cloudevents/manifest_bundle.h"
#include "libs/cloudevents/testing/captured.h"
#include "libs/kube_object/object.h"

namespace mmi::fleet_sim {
namespace {

using cloudevents::ManifestBundleStatus;
using nlohmann::json;

// The status of the captured agent event at `index` (0-based line).
ManifestBundleStatus Captured(std::size_t index) {
  auto records = cloudevents::testing::ReadCaptured(cloudevents::testing::kCapturedAgentEvents);
  EXPECT_TRUE(records.ok()) << records.status();
  if (!records.ok() || index >= records->size()) {
    return {};
  }
  auto status = cloudevents::DecodeManifestBundleStatus((*records)[index].message.payload);
  EXPECT_TRUE(status.ok()) << status.status();
  return status.ok() ? *status : ManifestBundleStatus{};
}

cloudevents::Timestamp At(const std::string& rfc3339) {
  auto t = kube::ParseKubeTime(rfc3339);
  EXPECT_TRUE(t.ok()) << rfc3339;
  return std::chrono::time_point_cast<std::chrono::nanoseconds>(*t);
}

// The captured bundle: one Application with a JSONPaths `status` rule, as the dispatcher sends.
ApplyPlan GuestbookPlan(const std::string& cluster = "cluster1") {
  const std::string app = cluster + "-guestbook";
  cloudevents::ManifestBundle bundle;
  bundle.manifests = {json{{"apiVersion", "argoproj.io/v1alpha1"},
                           {"kind", "Application"},
                           {"metadata", {{"name", app}, {"namespace", "openshift-gitops"}}}}};
  cloudevents::ManifestConfigOption config;
  config.resource_identifier = {"argoproj.io", "applications", app, "openshift-gitops"};
  config.feedback_rules = {{"JSONPaths", {{"status", std::nullopt, ".status"}}}};
  bundle.manifest_configs = {config};
  return *PlanBundle(bundle);
}

TEST(BuildSpokeStatusTest, AppliedAndAvailableAsTheAgentReportsThem) {
  const ApplyPlan plan = GuestbookPlan();
  const ManifestBundleStatus previous = Captured(0);  // Applied only
  const std::vector<ManifestObservation> observed = {
      {absl::OkStatus(), plan.manifests[0].manifest}};  // no .status yet: no feedback value
  const ManifestBundleStatus got = BuildSpokeStatus({.plan = &plan,
                                                     .observed = &observed,
                                                     .version = 1,
                                                     .cluster = "cluster1",
                                                     .now = At("2026-11-26T13:37:20Z"),
                                                     .previous = &previous});
  EXPECT_EQ(cloudevents::ToJson(got), cloudevents::ToJson(Captured(1)));
}

TEST(BuildSpokeStatusTest, FeedbackCarriesTheApplicationStatusAsRawJson) {
  const ApplyPlan plan = GuestbookPlan();
  const ManifestBundleStatus want = Captured(2);
  ASSERT_EQ(want.resource_status.size(), 1u);
  ASSERT_EQ(want.resource_status[0].status_feedback.size(), 1u);
  json live = plan.manifests[0].manifest;
  live["status"] = want.resource_status[0].status_feedback[0].field_value.json_raw_value;
  const ManifestBundleStatus previous = Captured(1);
  const std::vector<ManifestObservation> observed = {{absl::OkStatus(), live}};
  const ManifestBundleStatus got = BuildSpokeStatus({.plan = &plan,
                                                     .observed = &observed,
                                                     .version = 1,
                                                     .cluster = "cluster1",
                                                     .now = At("2026-11-26T13:37:43Z"),
                                                     .previous = &previous});
  EXPECT_EQ(cloudevents::ToJson(got), cloudevents::ToJson(want));
}

TEST(BuildSpokeStatusTest, AFailedApplyNamesTheError) {
  ApplyPlan plan = GuestbookPlan("cluster2");
  const ManifestBundleStatus previous = Captured(20);
  const std::vector<ManifestObservation> observed = {
      {absl::NotFoundError(R"(namespaces "openshift-gitops" not found)"), std::nullopt}};
  const ManifestBundleStatus got = BuildSpokeStatus({.plan = &plan,
                                                     .observed = &observed,
                                                     .version = 1,
                                                     .cluster = "cluster2",
                                                     .now = At("2026-11-26T13:46:53Z"),
                                                     .previous = &previous});
  const ManifestBundleStatus want = Captured(21);
  EXPECT_EQ(cloudevents::ToJson(got), cloudevents::ToJson(want));
}

TEST(BuildSpokeStatusTest, DeletedOnceTheObjectIsGoneKeepingItsLastFeedback) {
  const ApplyPlan plan = GuestbookPlan();
  const ManifestBundleStatus previous = Captured(5);  // Deleting, Available=False
  const ManifestBundleStatus want = Captured(6);
  const cloudevents::Condition* deleted =
      cloudevents::FindCondition(want.conditions, cloudevents::kConditionDeleted);
  ASSERT_NE(deleted, nullptr);
  const std::vector<ManifestObservation> observed = {{absl::OkStatus(), std::nullopt}};
  const ManifestBundleStatus got = BuildSpokeStatus({.plan = &plan,
                                                     .observed = &observed,
                                                     .version = 1,
                                                     .cluster = "cluster1",
                                                     .deleting = true,
                                                     .deleted = true,
                                                     .now = *deleted->last_transition_time,
                                                     .previous = &previous});
  EXPECT_EQ(cloudevents::ToJson(got), cloudevents::ToJson(want));
}

TEST(BuildSpokeStatusTest, AnUnknownWorkReportsOnlyItsDeletion) {
  const ApplyPlan empty;
  const std::vector<ManifestObservation> none;
  const ManifestBundleStatus want = Captured(42);
  const ManifestBundleStatus previous = Captured(41);
  const ManifestBundleStatus got = BuildSpokeStatus(
      {.plan = &empty,
       .observed = &none,
       .version = 1,
       .cluster = "cluster1",
       .deleting = true,
       .deleted = true,
       .now = *cloudevents::FindCondition(want.conditions, "Deleted")->last_transition_time,
       .previous = &previous});
  EXPECT_EQ(cloudevents::ToJson(got), cloudevents::ToJson(want));
}

}  // namespace
}  // namespace mmi::fleet_sim
