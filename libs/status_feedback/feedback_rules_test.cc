#include "libs/status_feedback/feedback_rules.h"

#include <algorithm>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace mmi::status_feedback {
namespace {

using cloudevents::FeedbackRule;

// "WellKnownStatus" or "JSONPaths:<name>=<path>,..." per rule, for table comparisons.
std::vector<std::string> Describe(const std::vector<FeedbackRule>& rules) {
  std::vector<std::string> out;
  for (const FeedbackRule& rule : rules) {
    std::string text = rule.type;
    for (const auto& p : rule.json_paths) {
      text += (text == rule.type ? ":" : ",") + p.name + "=" + p.path;
    }
    out.push_back(text);
  }
  return out;
}

TEST(FeedbackRulesTest, WellKnownKindsAreExactlyTheAgentsThree) {
  EXPECT_TRUE(HasWellKnownStatus("apps", "v1", "Deployment"));
  EXPECT_TRUE(HasWellKnownStatus("batch", "v1", "Job"));
  EXPECT_TRUE(HasWellKnownStatus("", "v1", "Pod"));
  EXPECT_FALSE(HasWellKnownStatus("apps", "v1", "StatefulSet"));
  EXPECT_FALSE(HasWellKnownStatus("apps", "v1", "DaemonSet"));
  EXPECT_FALSE(HasWellKnownStatus("apps", "v1beta2", "Deployment"));
  EXPECT_FALSE(HasWellKnownStatus("", "v1", "ConfigMap"));
}

TEST(FeedbackRulesTest, EachKindGetsItsRules) {
  struct Row {
    std::string group, version, kind;
    std::vector<std::string> want;
  };
  const std::vector<Row> rows = {
      {"apps",
       "v1",
       "Deployment",
       {"WellKnownStatus",
        "JSONPaths:Generation=.metadata.generation,ObservedGeneration=.status.observedGeneration,"
        "UpdatedReplicas=.status.updatedReplicas,DesiredReplicas=.spec.replicas,"
        "Paused=.spec.paused,Conditions=.status.conditions"}},
      {"batch", "v1", "Job", {"WellKnownStatus", "JSONPaths:Conditions=.status.conditions"}},
      {"",
       "v1",
       "Pod",
       {"WellKnownStatus",
        "JSONPaths:RestartPolicy=.spec.restartPolicy,Message=.status.message,"
        "ContainerStatuses=.status.containerStatuses,"
        "InitContainerStatuses=.status.initContainerStatuses,Conditions=.status.conditions"}},
      {"apps",
       "v1",
       "StatefulSet",
       {"JSONPaths:Generation=.metadata.generation,ObservedGeneration=.status.observedGeneration,"
        "DesiredReplicas=.spec.replicas,ReadyReplicas=.status.readyReplicas,"
        "UpdatedReplicas=.status.updatedReplicas,CurrentReplicas=.status.currentReplicas,"
        "UpdateStrategy=.spec.updateStrategy,UpdateRevision=.status.updateRevision,"
        "CurrentRevision=.status.currentRevision"}},
      {"apps",
       "v1",
       "DaemonSet",
       {"JSONPaths:Generation=.metadata.generation,ObservedGeneration=.status.observedGeneration,"
        "UpdateStrategy=.spec.updateStrategy,DesiredNumberScheduled=.status.desiredNumberScheduled,"
        "UpdatedNumberScheduled=.status.updatedNumberScheduled,"
        "NumberAvailable=.status.numberAvailable"}},
      {"apps",
       "v1",
       "ReplicaSet",
       {"JSONPaths:Generation=.metadata.generation,ObservedGeneration=.status.observedGeneration,"
        "DesiredReplicas=.spec.replicas,AvailableReplicas=.status.availableReplicas,"
        "Conditions=.status.conditions"}},
      {"", "v1", "PersistentVolumeClaim", {"JSONPaths:Phase=.status.phase"}},
      {"",
       "v1",
       "Service",
       {"JSONPaths:ServiceType=.spec.type,LoadBalancerIngress=.status.loadBalancer.ingress"}},
      {"networking.k8s.io",
       "v1",
       "Ingress",
       {"JSONPaths:LoadBalancerIngress=.status.loadBalancer.ingress"}},
      {"apiregistration.k8s.io", "v1", "APIService", {"JSONPaths:Conditions=.status.conditions"}},
      {"", "v1", "ConfigMap", {"JSONPaths:Conditions=.status.conditions"}},
      {"example.com", "v1", "Widget", {"JSONPaths:Conditions=.status.conditions"}},
  };
  for (const Row& row : rows) {
    EXPECT_EQ(Describe(FeedbackRulesFor(row.group, row.version, row.kind)), row.want)
        << row.group << "/" << row.version << "/" << row.kind;
  }
}

TEST(FeedbackRulesTest, NoKindReportsTwoValuesUnderOneName) {
  // The WellKnownStatus names per kind (open-cluster-management-io/ocm statusfeedback/rules).
  const std::vector<std::string> deployment = {"ReadyReplicas", "Replicas", "AvailableReplicas"};
  const std::vector<std::string> job = {"JobComplete", "JobSucceeded"};
  const std::vector<std::string> pod = {"PodReady", "PodPhase"};
  struct Row {
    std::string group, version, kind;
    std::vector<std::string> well_known;
  };
  const std::vector<Row> rows = {
      {"apps", "v1", "Deployment", deployment},
      {"apps", "v1beta2", "Deployment", {}},
      {"batch", "v1", "Job", job},
      {"", "v1", "Pod", pod},
      {"apps", "v1", "StatefulSet", {}},
      {"apps", "v1", "DaemonSet", {}},
      {"apps", "v1", "ReplicaSet", {}},
      {"", "v1", "Service", {}},
  };
  for (const Row& row : rows) {
    std::vector<std::string> names;
    for (const FeedbackRule& rule : FeedbackRulesFor(row.group, row.version, row.kind)) {
      if (rule.type == "WellKnownStatus") {
        names.insert(names.end(), row.well_known.begin(), row.well_known.end());
      }
      for (const auto& path : rule.json_paths) {
        names.push_back(path.name);
      }
    }
    std::sort(names.begin(), names.end());
    EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end())
        << row.group << "/" << row.version << "/" << row.kind;
  }
}

TEST(FeedbackRulesTest, OldDeploymentVersionsReadTheWellKnownFieldsByPath) {
  const auto rules = FeedbackRulesFor("apps", "v1beta2", "Deployment");
  ASSERT_EQ(rules.size(), 1U);
  EXPECT_EQ(rules[0].type, "JSONPaths");
  std::vector<std::string> names;
  for (const auto& p : rules[0].json_paths) {
    names.push_back(p.name);
  }
  EXPECT_NE(std::find(names.begin(), names.end(), "AvailableReplicas"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "Replicas"), names.end());
}

TEST(FeedbackRulesTest, RulesRoundTripThroughTheBundleCodec) {
  cloudevents::ManifestBundle bundle;
  bundle.manifests.push_back(nlohmann::json{{"apiVersion", "apps/v1"},
                                            {"kind", "Deployment"},
                                            {"metadata", {{"name", "web"}, {"namespace", "a"}}}});
  bundle.manifest_configs.push_back(cloudevents::ManifestConfigOption{
      .resource_identifier =
          {.group = "apps", .resource = "deployments", .name = "web", .namespace_ = "a"},
      .feedback_rules = FeedbackRulesFor("apps", "v1", "Deployment"),
      .update_strategy = std::nullopt,
      .condition_rules = {},
      .feedback_scrape_type = std::nullopt});
  const auto decoded = cloudevents::ManifestBundleFromJson(cloudevents::ToJson(bundle));
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(*decoded, bundle);
}

}  // namespace
}  // namespace mmi::status_feedback
