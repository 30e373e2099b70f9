#include "libs/cloudevents/manifest_bundle.h"

#include <string>

#include "gtest/gtest.h"
#include "libs/cloudevents/internal/test_samples.h"
#include "libs/cloudevents/json_format.h"
#include "nlohmann/json.hpp"

namespace mmi::cloudevents {
namespace {

using nlohmann::json;
using testing::ReadSample;

Event SampleEvent(const std::string& name) {
  auto event = DecodeStructuredJson(ReadSample(name));
  EXPECT_TRUE(event.ok()) << name << ": " << event.status();
  return event.ok() ? *event : Event{};
}

void ExpectSampleDeploymentBundle(const ManifestBundle& bundle) {
  ASSERT_EQ(bundle.manifests.size(), 1U);
  EXPECT_EQ(bundle.manifests[0]["kind"], "Deployment");
  EXPECT_EQ(bundle.manifests[0]["metadata"]["name"], "maestro-e2e-upgrade-test");
  ASSERT_EQ(bundle.manifest_configs.size(), 1U);
  const auto& config = bundle.manifest_configs[0];
  EXPECT_EQ(config.resource_identifier,
            (ResourceIdentifier{"apps", "deployments", "maestro-e2e-upgrade-test", "default"}));
  ASSERT_EQ(config.feedback_rules.size(), 1U);
  EXPECT_EQ(config.feedback_rules[0].type, kFeedbackJsonPaths);
  ASSERT_EQ(config.feedback_rules[0].json_paths.size(), 1U);
  EXPECT_EQ(config.feedback_rules[0].json_paths[0].name, "status");
  EXPECT_EQ(config.feedback_rules[0].json_paths[0].path, ".status");
  ASSERT_TRUE(config.update_strategy.has_value());
  EXPECT_EQ(config.update_strategy->type, kUpdateStrategyServerSideApply);
  ASSERT_TRUE(config.update_strategy->server_side_apply.has_value());
  EXPECT_TRUE(config.update_strategy->server_side_apply->force);
  EXPECT_EQ(config.update_strategy->server_side_apply->field_manager, "maestro-agent");
  EXPECT_FALSE(bundle.delete_option.has_value());
  EXPECT_FALSE(bundle.executer.has_value());
}

TEST(ManifestBundleTest, DecodesTheSpecSamples) {
  for (const char* name : {"cloudevents.grpcclient.json", "cloudevents.spec.maestro.json"}) {
    SCOPED_TRACE(name);
    auto bundle = ManifestBundleOf(SampleEvent(name));
    ASSERT_TRUE(bundle.ok()) << bundle.status();
    ExpectSampleDeploymentBundle(*bundle);
  }
}

TEST(ManifestBundleTest, EncodingReproducesTheSampleData) {
  for (const char* name : {"cloudevents.grpcclient.json", "cloudevents.spec.maestro.json"}) {
    SCOPED_TRACE(name);
    const Event event = SampleEvent(name);
    auto bundle = ManifestBundleOf(event);
    ASSERT_TRUE(bundle.ok());
    auto encoded = EncodeManifestBundle(*bundle);
    ASSERT_TRUE(encoded.ok()) << encoded.status();
    EXPECT_EQ(json::parse(*encoded), json::parse(*event.data));
  }
}

TEST(ManifestBundleTest, MatchesTheManifestWorkSpecItCameFrom) {
  // manifestwork.json is the work the grpcclient sample was built from.
  const json work = json::parse(ReadSample("manifestwork.json"));
  json data{{"manifests", work["spec"]["workload"]["manifests"]},
            {"manifestConfigs", work["spec"]["manifestConfigs"]}};
  auto from_work = ManifestBundleFromJson(data);
  ASSERT_TRUE(from_work.ok()) << from_work.status();
  auto from_event = ManifestBundleOf(SampleEvent("cloudevents.grpcclient.json"));
  ASSERT_TRUE(from_event.ok());
  EXPECT_EQ(*from_work, *from_event);
}

TEST(ManifestBundleTest, RoundTripsEveryOptionalMember) {
  ManifestBundle bundle;
  bundle.manifests.push_back(json{{"apiVersion", "v1"},
                                  {"kind", "ConfigMap"},
                                  {"metadata", {{"name", "c"}, {"namespace", "n"}}}});
  DeleteOption del;
  del.propagation_policy = "SelectivelyOrphan";
  del.orphaning_rules = std::vector<ResourceIdentifier>{{"", "configmaps", "c", "n"}};
  del.ttl_seconds_after_finished = 30;
  bundle.delete_option = del;
  ManifestConfigOption config;
  config.resource_identifier = {"argoproj.io", "applications", "guestbook-cluster1",
                                "openshift-gitops"};
  config.feedback_rules.push_back(
      FeedbackRule{std::string(kFeedbackJsonPaths), {JsonPath{"status", "v1alpha1", ".status"}}});
  ServerSideApplyConfig ssa;
  ssa.ignore_fields.push_back(
      IgnoreField{"OnSpokeChange",
                  {".operation", ".metadata.annotations[\"argocd.argoproj.io/refresh\"]"},
                  {"/spec/x"},
                  {".y"}});
  config.update_strategy = UpdateStrategy{std::string(kUpdateStrategyServerSideApply), ssa};
  config.condition_rules.push_back(ConditionRule{"Complete", "CEL", {"true"}, "m", "me"});
  config.feedback_scrape_type = "Watch";
  bundle.manifest_configs.push_back(config);
  bundle.executer = ManifestWorkExecutor{"ServiceAccount", "ns", "sa"};

  auto encoded = EncodeManifestBundle(bundle);
  ASSERT_TRUE(encoded.ok()) << encoded.status();
  const json wire = json::parse(*encoded);
  EXPECT_EQ(wire["executer"]["subject"]["serviceAccount"]["name"], "sa");
  EXPECT_FALSE(wire.contains("executor"));
  EXPECT_EQ(wire["deleteOption"]["selectivelyOrphans"]["orphaningRules"][0]["group"], "");
  EXPECT_EQ(wire["manifestConfigs"][0]["updateStrategy"]["serverSideApply"]["force"], false);
  EXPECT_EQ(wire["manifestConfigs"][0]["updateStrategy"]["serverSideApply"]["ignoreFields"][0]
                ["jsonPaths"][1],
            ".metadata.annotations[\"argocd.argoproj.io/refresh\"]");
  EXPECT_EQ(wire["manifestConfigs"][0]["conditionRules"][0]["celExpressions"][0], "true");
  auto decoded = DecodeManifestBundle(*encoded);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(*decoded, bundle);
}

TEST(ManifestBundleTest, AlwaysWritesManifestsAndOmitsUnsetOptionalMembers) {
  auto encoded = EncodeManifestBundle(ManifestBundle{});
  ASSERT_TRUE(encoded.ok());
  EXPECT_EQ(*encoded, R"({"manifests":[]})");
}

TEST(ManifestBundleTest, AcceptsGoNullsAndUnknownMembers) {
  auto bundle = DecodeManifestBundle(
      R"({"manifests":null,"deleteOption":null,"manifestConfigs":[{"resourceIdentifier":{"group":"","resource":"r","name":"n","namespace":""},"feedbackRules":null,"future":1}],"unknown":{"x":1}})");
  ASSERT_TRUE(bundle.ok()) << bundle.status();
  EXPECT_TRUE(bundle->manifests.empty());
  EXPECT_EQ(bundle->manifest_configs[0].resource_identifier.resource, "r");
}

TEST(ManifestBundleTest, RejectsWrongTypesNamingThePath) {
  const std::pair<const char*, const char*> cases[] = {
      {"[]", "data must be an object"},
      {R"({"manifests":{}})", "data.manifests must be an array"},
      {R"({"manifests":["x"]})", "data.manifests[0] must be a Kubernetes object"},
      {R"({"manifests":[],"deleteOption":{"propagationPolicy":5}})",
       "data.deleteOption.propagationPolicy must be a string"},
      {R"({"manifests":[],"deleteOption":{"ttlSecondsAfterFinished":1.5}})",
       "data.deleteOption.ttlSecondsAfterFinished must be an integer"},
      {R"({"manifestConfigs":[{"feedbackRules":[{"type":"JSONPaths","jsonPaths":[{"name":1}]}]}]})",
       "data.manifestConfigs[0].feedbackRules[0].jsonPaths[0].name must be a string"},
      {R"({"manifestConfigs":[{"updateStrategy":{"serverSideApply":{"force":"yes"}}}]})",
       "data.manifestConfigs[0].updateStrategy.serverSideApply.force must be a boolean"},
      {R"({"manifestConfigs":[{"updateStrategy":{"serverSideApply":{"ignoreFields":[{"jsonPaths":[1]}]}}}]})",
       "ignoreFields[0].jsonPaths[0] must be a string"},
      {R"({"executer":{"subject":{"type":"ServiceAccount","serviceAccount":"sa"}}})",
       "data.executer.subject.serviceAccount must be an object"},
  };
  for (const auto& [text, needle] : cases) {
    auto bundle = DecodeManifestBundle(text);
    EXPECT_EQ(bundle.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_NE(std::string(bundle.status().message()).find(needle), std::string::npos)
        << text << " -> " << bundle.status();
  }
}

TEST(ManifestBundleTest, EventWithoutJsonDataHasNoBundle) {
  Event event = SampleEvent("cloudevents.grpcclient.json");
  event.data.reset();
  EXPECT_EQ(ManifestBundleOf(event).status().code(), absl::StatusCode::kInvalidArgument);
  event.data = "{}";
  event.data_content_type = "text/plain";
  EXPECT_EQ(ManifestBundleOf(event).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ManifestBundleStatusTest, DecodesTheAgentStatusSample) {
  auto status = ManifestBundleStatusOf(SampleEvent("cloudevents.agent.json"));
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_FALSE(status->manifest_bundle.has_value());
  ASSERT_EQ(status->conditions.size(), 1U);
  EXPECT_EQ(status->conditions[0].type, "Applied");
  EXPECT_EQ(status->conditions[0].observed_generation, 1);
  EXPECT_EQ(FormatTimestamp(*status->conditions[0].last_transition_time), "2025-12-16T06:00:17Z");
  ASSERT_EQ(status->resource_status.size(), 1U);
  const auto& resource = status->resource_status[0];
  EXPECT_EQ(resource.resource_meta,
            (ManifestResourceMeta{0, "apps", "v1", "Deployment", "deployments",
                                  "maestro-e2e-upgrade-test", "default"}));
  EXPECT_TRUE(resource.status_feedback.empty());
  EXPECT_FALSE(IsDeleted(*status));
}

TEST(ManifestBundleStatusTest, DecodesMaestroStatusWithEchoedBundleAndJsonRawFeedback) {
  auto status = ManifestBundleStatusOf(SampleEvent("cloudevents.status.maestro.json"));
  ASSERT_TRUE(status.ok()) << status.status();
  ASSERT_TRUE(status->manifest_bundle.has_value());
  ExpectSampleDeploymentBundle(*status->manifest_bundle);
  ASSERT_EQ(status->conditions.size(), 2U);
  EXPECT_NE(FindCondition(status->conditions, "Available"), nullptr);
  EXPECT_EQ(FindCondition(status->conditions, "Deleted"), nullptr);
  ASSERT_EQ(status->resource_status.size(), 1U);
  const auto& feedback = status->resource_status[0].status_feedback;
  ASSERT_EQ(feedback.size(), 1U);
  EXPECT_EQ(feedback[0].name, "status");
  EXPECT_EQ(feedback[0].field_value.type, FieldValueType::kJsonRaw);
  // jsonRaw is a string holding JSON: parsed a second time.
  const json& parsed = feedback[0].field_value.json_raw_value;
  EXPECT_EQ(parsed["conditions"][0]["type"], "Progressing");
  EXPECT_EQ(parsed["conditions"][0]["message"],
            "Found new replica set \"maestro-e2e-upgrade-test-68bd67c4c7\"");
  EXPECT_EQ(json::parse(feedback[0].field_value.json_raw), parsed);
  EXPECT_EQ(status->resource_status[0].conditions.size(), 3U);
  EXPECT_EQ(status->resource_status[0].conditions[2].message, "");
}

TEST(ManifestBundleStatusTest, EncodingReproducesTheSampleData) {
  for (const char* name : {"cloudevents.agent.json", "cloudevents.status.maestro.json"}) {
    SCOPED_TRACE(name);
    const Event event = SampleEvent(name);
    auto status = ManifestBundleStatusOf(event);
    ASSERT_TRUE(status.ok());
    auto encoded = EncodeManifestBundleStatus(*status);
    ASSERT_TRUE(encoded.ok()) << encoded.status();
    EXPECT_EQ(json::parse(*encoded), json::parse(*event.data));
    auto again = DecodeManifestBundleStatus(*encoded);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(*again, *status);
  }
}

TEST(ManifestBundleStatusTest, DecodesTheWatchedWorkResourceStatus) {
  const json work = json::parse(ReadSample("manifestwork.watched.json"));
  json data{{"conditions", work["status"]["conditions"]},
            {"resourceStatus", work["status"]["resourceStatus"]["manifests"]}};
  auto status = ManifestBundleStatusFromJson(data);
  ASSERT_TRUE(status.ok()) << status.status();
  const auto& value = status->resource_status.at(0).status_feedback.at(0).field_value;
  EXPECT_EQ(value.json_raw_value["observedGeneration"], 1);
  EXPECT_EQ(value.json_raw_value["conditions"][1]["reason"], "NewReplicaSetAvailable");
}

TEST(ManifestBundleStatusTest, DetectsTheFinalDeletedCondition) {
  // §2.8: the final status once the agent has removed everything.
  auto status = DecodeManifestBundleStatus(
      R"({"conditions":[{"type":"Deleted","status":"True","lastTransitionTime":"2026-06-02T08:00:03Z","reason":"ManifestsDeleted","message":"The manifests are deleted from the cluster cluster1"}]})");
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_TRUE(IsDeleted(*status));
  auto not_yet = DecodeManifestBundleStatus(
      R"({"conditions":[{"type":"Deleted","status":"False","lastTransitionTime":null,"reason":"","message":""}]})");
  ASSERT_TRUE(not_yet.ok()) << not_yet.status();
  EXPECT_FALSE(IsDeleted(*not_yet));
  auto no_conditions = DecodeManifestBundleStatus(R"({"conditions":null})");
  ASSERT_TRUE(no_conditions.ok());
  EXPECT_FALSE(IsDeleted(*no_conditions));
}

TEST(ManifestBundleStatusTest, WritesWhatGoWrites) {
  ManifestBundleStatus status;
  ManifestCondition resource;
  resource.resource_meta.kind = "Application";
  status.resource_status.push_back(resource);
  auto encoded = EncodeManifestBundleStatus(status);
  ASSERT_TRUE(encoded.ok());
  EXPECT_EQ(*encoded,
            R"({"conditions":null,"resourceStatus":[{"conditions":[],"resourceMeta":{"group":"",)"
            R"("kind":"Application","name":"","namespace":"","ordinal":0,"resource":"",)"
            R"("version":""},"statusFeedback":{}}]})");
}

TEST(ManifestBundleStatusTest, RoundTripsEveryFeedbackValueType) {
  ManifestBundleStatus status;
  ManifestCondition resource;
  FieldValue integer;
  integer.type = FieldValueType::kInteger;
  integer.integer = -5;
  FieldValue text;
  text.type = FieldValueType::kString;
  text.string = "Healthy";
  FieldValue flag;
  flag.type = FieldValueType::kBoolean;
  flag.boolean = true;
  FieldValue raw;
  raw.type = FieldValueType::kJsonRaw;
  raw.json_raw = R"({"a":[1,2]})";
  raw.json_raw_value = json::parse(raw.json_raw);
  resource.status_feedback = {{"i", integer}, {"s", text}, {"b", flag}, {"r", raw}};
  Condition condition;
  condition.type = "Applied";
  condition.status = "True";
  condition.last_transition_time = *ParseTimestamp("2026-06-01T10:00:04Z");
  resource.conditions.push_back(condition);
  status.resource_status.push_back(resource);
  status.conditions.push_back(condition);
  auto encoded = EncodeManifestBundleStatus(status);
  ASSERT_TRUE(encoded.ok());
  const json wire = json::parse(*encoded);
  const json& values = wire["resourceStatus"][0]["statusFeedback"]["values"];
  EXPECT_EQ(values[0]["fieldValue"], (json{{"type", "Integer"}, {"integer", -5}}));
  EXPECT_EQ(values[3]["fieldValue"], (json{{"type", "JsonRaw"}, {"jsonRaw", R"({"a":[1,2]})"}}));
  EXPECT_FALSE(wire["conditions"][0].contains("observedGeneration"));
  auto decoded = DecodeManifestBundleStatus(*encoded);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(*decoded, status);
}

TEST(ManifestBundleStatusTest, RejectsInvalidMembersNamingThePath) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"conditions":{}})", "data.conditions must be an array"},
      {R"({"conditions":[{"type":"A","lastTransitionTime":"yesterday"}]})",
       "data.conditions[0].lastTransitionTime"},
      {R"({"conditions":[{"observedGeneration":"1"}]})",
       "data.conditions[0].observedGeneration must be an integer"},
      {R"({"resourceStatus":[{"resourceMeta":{"ordinal":4294967296}}]})",
       "data.resourceStatus[0].resourceMeta.ordinal is outside the int32 range"},
      {R"({"resourceStatus":[{"statusFeedback":{"values":[{"name":"s","fieldValue":{"type":"Float","string":"1"}}]}}]})",
       "data.resourceStatus[0].statusFeedback.values[0].fieldValue.type must be Integer"},
      {R"({"resourceStatus":[{"statusFeedback":{"values":[{"name":"s","fieldValue":{"type":"JsonRaw"}}]}}]})",
       "data.resourceStatus[0].statusFeedback.values[0].fieldValue.jsonRaw is required"},
      {R"({"resourceStatus":[{"statusFeedback":{"values":[{"name":"s","fieldValue":{"type":"JsonRaw","jsonRaw":"{not json"}}]}}]})",
       "data.resourceStatus[0].statusFeedback.values[0].fieldValue.jsonRaw is not valid JSON"},
      {R"({"resourceStatus":[{"statusFeedback":{"values":[{"name":"s","fieldValue":{"type":"JsonRaw","jsonRaw":{"a":1}}}]}}]})",
       "fieldValue.jsonRaw must be a string"},
      {R"({"resourceStatus":[{"statusFeedback":{"values":[{"name":"s"}]}}]})",
       "values[0].fieldValue is required"},
      {R"({"manifestBundle":{"manifests":[1]}})", "data.manifestBundle.manifests[0]"},
  };
  for (const auto& [text, needle] : cases) {
    auto status = DecodeManifestBundleStatus(text);
    EXPECT_EQ(status.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_NE(std::string(status.status().message()).find(needle), std::string::npos)
        << text << " -> " << status.status();
  }
}

TEST(ManifestBundleStatusTest, LimitsNestingInsideJsonRaw) {
  const std::string deep = std::string(500, '[') + std::string(500, ']');
  const json data =
      json::parse(R"({"resourceStatus":[{"statusFeedback":{"values":[{"name":"s","fieldValue":)"
                  R"({"type":"JsonRaw","jsonRaw":")" +
                  deep + R"("}}]}}]})");
  auto status = ManifestBundleStatusFromJson(data);
  EXPECT_EQ(status.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(status.status().message()).find("deeper than"), std::string::npos);
}

}  // namespace
}  // namespace mmi::cloudevents
