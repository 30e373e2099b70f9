#include "tools/fleet-sim/spoke_work_agent.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "libs/cloudevents/maestro_events.h"
#include "libs/cloudevents/manifest_bundle.h"
#include "libs/common/testing/fake_clock.h"
#include "libs/kube/testing/fake_kube_client.h"

namespace mmi::fleet_sim {
namespace {

using cloudevents::Event;
using cloudevents::ManifestBundle;
using cloudevents::ManifestBundleStatus;
using nlohmann::json;

const kube::ResourceRef kConfigMaps{"", "v1", "configmaps", "demo"};
const kube::ResourceRef kDeployments{"apps", "v1", "deployments", "demo"};

ManifestBundle Bundle(std::string strategy, std::string policy = "Foreground") {
  ManifestBundle bundle;
  bundle.manifests = {json{{"apiVersion", "v1"},
                           {"kind", "ConfigMap"},
                           {"metadata", {{"name", "cm"}, {"namespace", "demo"}}},
                           {"data", {{"k", "v1"}}}},
                      json{{"apiVersion", "apps/v1"},
                           {"kind", "Deployment"},
                           {"metadata", {{"name", "web"}, {"namespace", "demo"}}},
                           {"spec", {{"replicas", 2}}}}};
  for (const auto& [resource, name] :
       {std::pair{"configmaps", "cm"}, std::pair{"deployments", "web"}}) {
    cloudevents::ManifestConfigOption config;
    config.resource_identifier = {std::string(resource) == "configmaps" ? "" : "apps", resource,
                                  name, "demo"};
    config.update_strategy = cloudevents::UpdateStrategy{
        strategy, cloudevents::ServerSideApplyConfig{false, "my-manager", {}}};
    config.feedback_rules = {
        {std::string(resource) == "configmaps" ? "JSONPaths" : "WellKnownStatus",
         {{"data", std::nullopt, ".data"}}}};
    bundle.manifest_configs.push_back(config);
  }
  bundle.delete_option = cloudevents::DeleteOption{policy, std::nullopt, std::nullopt};
  return bundle;
}

cloudevents::ResourceEventHeader Header(int version) {
  return {.id = "id-1",
          .source = "src",
          .time = {},
          .cluster = "spoke1",
          .resource_id = "res-1",
          .version = version};
}

Event Create(const ManifestBundle& bundle, int version = 1) {
  return cloudevents::MakeSpecRequest(Header(version), version == 1, R"({"name":"work-1"})",
                                      *cloudevents::EncodeManifestBundle(bundle));
}

Event Delete(int version = 1) {
  return cloudevents::MakeSpecDeleteRequest(Header(version), {}, R"({"name":"work-1"})");
}

ManifestBundleStatus StatusOf(const Event& event) {
  auto status = cloudevents::ManifestBundleStatusOf(event);
  EXPECT_TRUE(status.ok()) << status.status();
  return status.ok() ? *status : ManifestBundleStatus{};
}

std::string ConditionStatus(const std::vector<cloudevents::Condition>& conditions,
                            std::string_view type) {
  const cloudevents::Condition* c = cloudevents::FindCondition(conditions, type);
  return c == nullptr ? "absent" : c->status;
}

class SpokeWorkAgentTest : public ::testing::Test {
 protected:
  testing::FakeClock clock_;
  cloudevents::SequenceIdGenerator ids_{clock_};
  kube::testing::FakeKubeClient kube_;
  SpokeWorkAgent agent_{"spoke1", {}, kube_, clock_, ids_};
};

TEST_F(SpokeWorkAgentTest, ServerSideAppliesWithTheBundlesFieldManagerAndReportsStatus) {
  auto replies = agent_.Handle(Create(Bundle("ServerSideApply")));
  ASSERT_TRUE(replies.ok()) << replies.status();
  ASSERT_EQ(replies->size(), 1u);
  EXPECT_EQ(kube_.CountCalls("PATCH"), 2u);
  for (const auto& call : kube_.Calls()) {
    if (call.verb == "PATCH") {
      EXPECT_EQ(call.detail, "apply");
    }
  }
  ASSERT_TRUE(kube_.Get(kConfigMaps, "cm").ok());
  const Event& reply = (*replies)[0];
  EXPECT_EQ(*reply.ResourceVersion(), 1);
  EXPECT_TRUE(reply.HasExtension(cloudevents::kExtSequenceId));
  const ManifestBundleStatus status = StatusOf(reply);
  EXPECT_EQ(ConditionStatus(status.conditions, "Applied"), "True");
  EXPECT_EQ(ConditionStatus(status.conditions, "Available"), "True");
  ASSERT_EQ(status.resource_status.size(), 2u);
  const auto& cm = status.resource_status[0];
  EXPECT_EQ(cm.resource_meta.resource, "configmaps");
  ASSERT_EQ(cm.status_feedback.size(), 1u);
  EXPECT_EQ(cm.status_feedback[0].field_value.json_raw, R"({"k":"v1"})");
  EXPECT_EQ(ConditionStatus(cm.conditions, "StatusFeedbackSynced"), "True");
  EXPECT_EQ(agent_.WatchedCollections().size(), 2u);
}

TEST_F(SpokeWorkAgentTest, ReportsAWatchedChangeOnlyWhenTheStatusChanges) {
  ASSERT_TRUE(agent_.Handle(Create(Bundle("ServerSideApply"))).ok());
  auto live = kube_.Get(kDeployments, "web");
  ASSERT_TRUE(live.ok());
  EXPECT_TRUE(agent_.ObjectChanged(kDeployments, *live, false).empty());  // nothing new
  (*live)["status"] = {{"replicas", 2}, {"readyReplicas", 2}, {"availableReplicas", 2}};
  auto changed = agent_.ObjectChanged(kDeployments, *live, false);
  ASSERT_EQ(changed.size(), 1u);
  const ManifestBundleStatus status = StatusOf(changed[0]);
  ASSERT_EQ(status.resource_status.size(), 2u);
  const auto& web = status.resource_status[1];
  ASSERT_EQ(web.status_feedback.size(), 3u);
  EXPECT_EQ(web.status_feedback[0].name, "ReadyReplicas");
  EXPECT_EQ(web.status_feedback[0].field_value.integer, 2);
}

TEST_F(SpokeWorkAgentTest, UpdateCreatesThenUpdatesWhatChangedAndStaleSpecsAreIgnored) {
  ASSERT_TRUE(agent_.Handle(Create(Bundle("Update"))).ok());
  EXPECT_EQ(kube_.CountCalls("CREATE"), 2u);
  // Someone else labels the ConfigMap: the agent's update keeps it.
  ASSERT_TRUE(kube_
                  .Patch(kConfigMaps, "cm", kube::PatchType::kMerge,
                         json{{"metadata", {{"labels", {{"other", "x"}}}}}}, {}, "")
                  .ok());
  ManifestBundle changed = Bundle("Update");
  changed.manifests[0]["data"]["k"] = "v2";
  ASSERT_TRUE(agent_.Handle(Create(changed, 2)).ok());
  EXPECT_EQ(kube_.CountCalls("UPDATE"), 1u);  // the Deployment is unchanged
  EXPECT_EQ((*kube_.Get(kConfigMaps, "cm"))["data"]["k"], "v2");
  EXPECT_EQ((*kube_.Get(kConfigMaps, "cm"))["metadata"]["labels"]["other"], "x");
  auto stale = agent_.Handle(Create(Bundle("Update"), 1));
  ASSERT_TRUE(stale.ok());
  EXPECT_TRUE(stale->empty());
}

TEST_F(SpokeWorkAgentTest, CreateOnlyLeavesExistingObjectsAlone) {
  ASSERT_TRUE(
      kube_.Create(kConfigMaps, json{{"metadata", {{"name", "cm"}}}, {"data", {{"k", "mine"}}}}, {})
          .ok());
  ASSERT_TRUE(agent_.Handle(Create(Bundle("CreateOnly"))).ok());
  EXPECT_EQ((*kube_.Get(kConfigMaps, "cm"))["data"]["k"], "mine");
  EXPECT_EQ(kube_.CountCalls("UPDATE"), 0u);
}

TEST_F(SpokeWorkAgentTest, AFailedApplyIsReportedNotReturned) {
  kube_.FailNext("PATCH", absl::NotFoundError("namespaces \"demo\" not found"));
  auto replies = agent_.Handle(Create(Bundle("ServerSideApply")));
  ASSERT_TRUE(replies.ok());
  const ManifestBundleStatus status = StatusOf((*replies)[0]);
  EXPECT_EQ(ConditionStatus(status.conditions, "Applied"), "False");
  EXPECT_EQ(status.resource_status[0].conditions[0].message,
            "Failed to apply manifest: namespaces \"demo\" not found");
}

TEST_F(SpokeWorkAgentTest, TheResyncAppliesAgainWhatFailed) {
  kube_.FailNext("PATCH", absl::NotFoundError("namespaces \"demo\" not found"));
  ASSERT_TRUE(agent_.Handle(Create(Bundle("ServerSideApply"))).ok());
  EXPECT_FALSE(kube_.Get(kConfigMaps, "cm").ok());
  const std::size_t patches = kube_.CountCalls("PATCH");
  const std::vector<Event> resync = agent_.Resync();
  EXPECT_EQ(kube_.CountCalls("PATCH"), patches + 1);  // only the failed manifest again
  EXPECT_TRUE(kube_.Get(kConfigMaps, "cm").ok());
  ASSERT_EQ(resync.size(), 1u);
  const ManifestBundleStatus status = StatusOf(resync[0]);
  EXPECT_EQ(ConditionStatus(status.conditions, "Applied"), "True");
  EXPECT_TRUE(agent_.Resync().empty());  // nothing failed, nothing changed
  EXPECT_EQ(kube_.CountCalls("PATCH"), patches + 1);
}

TEST_F(SpokeWorkAgentTest, ReportsDeletedOnlyOnceTheObjectsAreGone) {
  ASSERT_TRUE(agent_.Handle(Create(Bundle("ServerSideApply"))).ok());
  // A finalizer holds the Deployment, as Argo CD's resources-finalizer holds an Application.
  ASSERT_TRUE(kube_
                  .Patch(kDeployments, "web", kube::PatchType::kMerge,
                         json{{"metadata", {{"finalizers", {"example.com/hold"}}}}}, {}, "")
                  .ok());
  auto deleting = agent_.Handle(Delete());
  ASSERT_TRUE(deleting.ok()) << deleting.status();
  ASSERT_EQ(deleting->size(), 1u);
  ManifestBundleStatus status = StatusOf((*deleting)[0]);
  EXPECT_EQ(ConditionStatus(status.conditions, "Deleting"), "True");
  EXPECT_FALSE(cloudevents::IsDeleted(status));
  EXPECT_EQ(kube_.CountCalls("DELETE"), 2u);
  EXPECT_FALSE(kube_.Get(kConfigMaps, "cm").ok());
  EXPECT_TRUE(agent_.Resync().empty() || !cloudevents::IsDeleted(StatusOf(agent_.Resync()[0])));

  ASSERT_TRUE(kube_
                  .Patch(kDeployments, "web", kube::PatchType::kMerge,
                         json{{"metadata", {{"finalizers", nullptr}}}}, {}, "")
                  .ok());
  ASSERT_FALSE(kube_.Get(kDeployments, "web").ok());
  auto done = agent_.ObjectChanged(
      kDeployments, json{{"metadata", {{"name", "web"}, {"namespace", "demo"}}}}, true);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_TRUE(cloudevents::IsDeleted(StatusOf(done[0])));
  EXPECT_EQ(agent_.work_count(), 0u);
}

TEST_F(SpokeWorkAgentTest, OrphanKeepsTheObjectsAndConfirmsAtOnce) {
  ASSERT_TRUE(agent_.Handle(Create(Bundle("ServerSideApply", "Orphan"))).ok());
  auto replies = agent_.Handle(Delete());
  ASSERT_TRUE(replies.ok());
  ASSERT_EQ(replies->size(), 1u);
  EXPECT_TRUE(cloudevents::IsDeleted(StatusOf((*replies)[0])));
  EXPECT_EQ(kube_.CountCalls("DELETE"), 0u);
  EXPECT_TRUE(kube_.Get(kConfigMaps, "cm").ok());
}

TEST_F(SpokeWorkAgentTest, AnswersSpecAndStatusResync) {
  ASSERT_TRUE(agent_.Handle(Create(Bundle("ServerSideApply"))).ok());
  const Event request = agent_.SpecResyncRequest();
  EXPECT_NE(request.data->find("res-1"), std::string::npos);
  auto resync = cloudevents::MakeStatusResyncRequest("src", "", {}, "r1", {});
  ASSERT_TRUE(resync.ok());
  auto answers = agent_.Handle(*resync);
  ASSERT_TRUE(answers.ok()) << answers.status();
  ASSERT_EQ(answers->size(), 1u);
  EXPECT_EQ((*answers)[0].type, cloudevents::kStatusResyncResponseType);
}

}  // namespace
}  // namespace mmi::fleet_sim
