#include "tools/fleet-sim/work_status.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "libs/status_feedback/feedback_rules.h"

namespace mmi::fleet_sim {
namespace {

using cloudevents::FieldValue;
using cloudevents::FieldValueType;
using cloudevents::ManifestBundle;
using cloudevents::ManifestCondition;
using nlohmann::json;

// A ManifestBundle of plain manifests as manifest delivery sends it: one manifestConfig per
// manifest with the feedback rules of its kind.
ManifestBundle PlainBundle(const json& manifests) {
  ManifestBundle bundle;
  for (const json& m : manifests) {
    bundle.manifests.push_back(m);
    const std::string api_version = m["apiVersion"];
    const auto slash = api_version.find('/');
    const std::string group = slash == std::string::npos ? "" : api_version.substr(0, slash);
    const std::string version =
        slash == std::string::npos ? api_version : api_version.substr(slash + 1);
    cloudevents::ManifestConfigOption config;
    config.resource_identifier.group = group;
    config.resource_identifier.resource = std::string(m["kind"]) + "s";
    config.resource_identifier.name = m["metadata"]["name"];
    config.resource_identifier.namespace_ = m["metadata"].value("namespace", "");
    config.feedback_rules =
        status_feedback::FeedbackRulesFor(group, version, std::string(m["kind"]));
    bundle.manifest_configs.push_back(std::move(config));
  }
  return bundle;
}

std::map<std::string, FieldValue> Values(const ManifestCondition& entry) {
  std::map<std::string, FieldValue> out;
  for (const auto& v : entry.status_feedback) {
    out[v.name] = v.field_value;
  }
  return out;
}

const cloudevents::Condition* Find(const ManifestCondition& entry, const std::string& type) {
  for (const auto& c : entry.conditions) {
    if (c.type == type) {
      return &c;
    }
  }
  return nullptr;
}

TEST(BuildWorkStatusTest, ReportsTheFeedbackOfSettledPlainManifests) {
  const ManifestBundle bundle = PlainBundle(json::parse(R"([
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}},
    {"apiVersion": "apps/v1", "kind": "Deployment",
     "metadata": {"name": "web", "namespace": "shop"}, "spec": {"replicas": 2}},
    {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "shop"},
     "spec": {"type": "ClusterIP"}},
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg", "namespace": "shop"}}
  ])"));
  const auto status = BuildWorkStatus(bundle, 3, cloudevents::Timestamp{}, {});
  ASSERT_EQ(status.resource_status.size(), 4u);
  for (const auto& entry : status.resource_status) {
    ASSERT_NE(Find(entry, "Applied"), nullptr) << entry.resource_meta.kind;
    ASSERT_NE(Find(entry, "Available"), nullptr) << entry.resource_meta.kind;
    const auto* synced = Find(entry, "StatusFeedbackSynced");
    ASSERT_NE(synced, nullptr) << entry.resource_meta.kind;
    EXPECT_EQ(synced->status, "True") << entry.resource_meta.kind << ": " << synced->message;
  }

  // A Namespace's rule reads its conditions; a settled one has none.
  EXPECT_TRUE(status.resource_status[0].status_feedback.empty());

  // WellKnownStatus and the JSONPaths of Argo CD's Deployment health rule, all settled.
  const auto deployment = Values(status.resource_status[1]);
  const struct {
    std::string_view name;
    std::int64_t want;
  } ints[] = {{status_feedback::kReadyReplicas, 2},     {status_feedback::kReplicas, 2},
              {status_feedback::kAvailableReplicas, 2}, {status_feedback::kUpdatedReplicas, 2},
              {status_feedback::kDesiredReplicas, 2},   {status_feedback::kGeneration, 1},
              {status_feedback::kObservedGeneration, 1}};
  for (const auto& c : ints) {
    const auto it = deployment.find(std::string(c.name));
    ASSERT_NE(it, deployment.end()) << c.name;
    EXPECT_EQ(it->second.type, FieldValueType::kInteger) << c.name;
    EXPECT_EQ(it->second.integer, c.want) << c.name;
  }
  ASSERT_TRUE(deployment.contains(std::string(status_feedback::kConditions)));
  EXPECT_EQ(deployment.at(std::string(status_feedback::kConditions)).type,
            FieldValueType::kJsonRaw);

  const auto service = Values(status.resource_status[2]);
  ASSERT_TRUE(service.contains(std::string(status_feedback::kServiceType)));
  EXPECT_EQ(service.at(std::string(status_feedback::kServiceType)).string, "ClusterIP");

  // A ConfigMap has no conditions: its rule reads nothing, and that is no error.
  EXPECT_TRUE(status.resource_status[3].status_feedback.empty());
}

TEST(BuildWorkStatusTest, AWellKnownRuleOnAKindWithoutOneIsAFeedbackError) {
  ManifestBundle bundle = PlainBundle(
      json::parse(R"([{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}}])"));
  bundle.manifest_configs[0].feedback_rules = {
      {std::string(cloudevents::kFeedbackWellKnownStatus), {}}};
  const auto status = BuildWorkStatus(bundle, 1, cloudevents::Timestamp{}, {});
  ASSERT_EQ(status.resource_status.size(), 1u);
  const auto* synced = Find(status.resource_status[0], "StatusFeedbackSynced");
  ASSERT_NE(synced, nullptr);
  EXPECT_EQ(synced->status, "False");
  EXPECT_EQ(synced->reason, "StatusFeedbackSyncFailed");
  EXPECT_NE(synced->message.find("ConfigMap"), std::string::npos) << synced->message;
}

}  // namespace
}  // namespace mmi::fleet_sim
