#include "tools/fleet-sim/status_feedback.h"

#include <gtest/gtest.h>

namespace mmi::fleet_sim {
namespace {

using cloudevents::FieldValueType;
using nlohmann::json;

const json kDeployment = json::parse(R"({
  "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
  "status": {"replicas": 2, "readyReplicas": 1, "availableReplicas": 1,
             "conditions": [{"type": "Available", "status": "True"},
                            {"type": "Progressing", "status": "True"},
                            {"type": "ReplicaFailure", "status": "False"}]}})");

TEST(EvaluateJsonPathTest, EscapedDotsNameOneMemberAsInKubernetesJsonPath) {
  const json app = json::parse(R"({"metadata": {"annotations": {
      "apps.open-cluster-management.io/dispatch-version": "7", "apps": {"x": 1}}}})");
  auto got = EvaluateJsonPath(
      app, R"(.metadata.annotations.apps\.open-cluster-management\.io/dispatch-version)");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(json(*got), json::array({"7"}));
  got = EvaluateJsonPath(app, ".metadata.annotations.apps.x");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(json(*got), json::array({1}));
}

TEST(EvaluateJsonPathTest, SelectsMembersIndicesAndFilters) {
  const struct {
    const char* path;
    json want;  // the array of matches
  } cases[] = {
      {".status.replicas", json::array({2})},
      {"{.status.readyReplicas}", json::array({1})},
      {".status.missing", json::array()},
      {".status.conditions[0].type", json::array({"Available"})},
      {".status.conditions[-1].type", json::array({"ReplicaFailure"})},
      {".status.conditions[*].type", json::array({"Available", "Progressing", "ReplicaFailure"})},
      {R"(.status.conditions[?(@.type=="Progressing")].status)", json::array({"True"})},
      {R"(.status.conditions[?(@.status=="True")].type)",
       json::array({"Available", "Progressing"})},
      {R"(.status.conditions[?(@.status!="True")].type)", json::array({"ReplicaFailure"})},
      {".metadata", json::array({json{{"name", "web"}}})},
  };
  for (const auto& c : cases) {
    auto got = EvaluateJsonPath(kDeployment, c.path);
    ASSERT_TRUE(got.ok()) << c.path << ": " << got.status();
    EXPECT_EQ(json(*got), c.want) << c.path;
  }
  EXPECT_TRUE(absl::IsInvalidArgument(EvaluateJsonPath(kDeployment, "status").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(EvaluateJsonPath(kDeployment, ".a[1:2]").status()));
}

TEST(ReadFeedbackTest, ReportsWellKnownDeploymentStatus) {
  const FeedbackResult result =
      ReadFeedback({{"WellKnownStatus", {}}}, kDeployment, "apps", "v1", "Deployment");
  EXPECT_EQ(result.error, "");
  ASSERT_EQ(result.values.size(), 3u);
  EXPECT_EQ(result.values[0].name, "ReadyReplicas");
  EXPECT_EQ(result.values[0].field_value.type, FieldValueType::kInteger);
  EXPECT_EQ(result.values[0].field_value.integer, 1);
  EXPECT_EQ(result.values[1].name, "Replicas");
  EXPECT_EQ(result.values[2].name, "AvailableReplicas");
}

TEST(ReadFeedbackTest, WellKnownStatusOfAKindWithoutOneIsAnError) {
  const FeedbackResult result =
      ReadFeedback({{"WellKnownStatus", {}}}, json{{"data", {}}}, "", "v1", "ConfigMap");
  EXPECT_TRUE(result.values.empty());
  EXPECT_NE(result.error.find("wellknown"), std::string::npos);
  EXPECT_EQ(WellKnownStatusPaths("batch", "v1", "Job").size(), 2u);
  EXPECT_EQ(WellKnownStatusPaths("", "v1", "Pod").size(), 2u);
}

TEST(ReadFeedbackTest, ObjectsAndSeveralMatchesAreRawJson) {
  const FeedbackResult result = ReadFeedback(
      {{"JSONPaths",
        {{"conditions", std::nullopt, ".status.conditions"},
         {"true", std::nullopt, R"(.status.conditions[?(@.status=="True")].type)"},
         {"ready", std::nullopt, R"(.status.conditions[?(@.type=="Available")].status)"},
         {"absent", std::nullopt, ".status.nothing"}}}},
      kDeployment, "apps", "v1", "Deployment");
  EXPECT_EQ(result.error, "");
  ASSERT_EQ(result.values.size(), 3u);  // a path without a match gives no value
  EXPECT_EQ(result.values[0].field_value.type, FieldValueType::kJsonRaw);
  EXPECT_EQ(result.values[0].field_value.json_raw, kDeployment["status"]["conditions"].dump());
  EXPECT_EQ(result.values[1].field_value.json_raw, R"(["Available","Progressing"])");
  EXPECT_EQ(result.values[2].field_value.type, FieldValueType::kString);
  EXPECT_EQ(result.values[2].field_value.string, "True");
}

TEST(ReadFeedbackTest, RawJsonOverTheLimitIsAnError) {
  const FeedbackResult result =
      ReadFeedback({{"JSONPaths", {{"status", std::nullopt, ".status"}}}}, kDeployment, "apps",
                   "v1", "Deployment", /*max_json_raw=*/10);
  EXPECT_TRUE(result.values.empty());
  EXPECT_NE(result.error.find("exceeding the limit"), std::string::npos);
}

}  // namespace
}  // namespace mmi::fleet_sim
