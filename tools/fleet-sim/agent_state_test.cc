#include "tools/fleet-sim/agent_state.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "libs/cloudevents/manifest_bundle.h"
#include "libs/cloudevents/object_meta.h"
#include "libs/cloudevents/resync.h"
#include "libs/cloudevents/sequence_id.h"
#include "libs/cloudevents/status_hash.h"
#include "libs/common/testing/fake_clock.h"
#include "prometheus/registry.h"
#include "tools/fleet-sim/fleet.h"

namespace mmi::fleet_sim {
namespace {

using cloudevents::Event;
using nlohmann::json;
using std::chrono::seconds;

constexpr std::string_view kSource = "mmi-dispatcher";

json ApplicationManifest(const std::string& name, const std::string& revision,
                         bool with_operation) {
  json app = {
      {"apiVersion", "argoproj.io/v1alpha1"},
      {"kind", "Application"},
      {"metadata", {{"name", name}, {"namespace", "openshift-gitops"}}},
      {"spec",
       {{"project", "default"},
        {"destination",
         {{"name", ""}, {"namespace", "guestbook"}, {"server", "https://kubernetes.default.svc"}}},
        {"source",
         {{"repoURL", "https://github.com/argoproj/argocd-example-apps.git"},
          {"path", "guestbook"},
          {"targetRevision", revision}}}}}};
  if (with_operation) {
    app["operation"] = {{"sync", {{"revision", revision}}},
                        {"initiatedBy", {{"username", "admin"}}}};
  }
  return app;
}

cloudevents::ManifestBundle AppBundle(const std::string& name, const std::string& revision,
                                      bool with_operation = false) {
  cloudevents::ManifestBundle bundle;
  bundle.manifests.push_back(ApplicationManifest(name, revision, with_operation));
  cloudevents::ManifestConfigOption config;
  config.resource_identifier = {"argoproj.io", "applications", name, "openshift-gitops"};
  cloudevents::FeedbackRule rule;
  rule.type = std::string(cloudevents::kFeedbackJsonPaths);
  rule.json_paths.push_back({"status", std::nullopt, ".status"});
  config.feedback_rules.push_back(rule);
  bundle.manifest_configs.push_back(config);
  return bundle;
}

Event SpecEvent(std::string_view action_type, const std::string& cluster, const std::string& id,
                int version, const cloudevents::ManifestBundle& bundle) {
  Event event;
  event.id = "spec-" + id + "-" + std::to_string(version);
  event.source = std::string(kSource);
  event.type = std::string(action_type);
  event.data_content_type = std::string(cloudevents::kJsonContentType);
  event.SetString(cloudevents::kExtClusterName, cluster);
  event.SetString(cloudevents::kExtOriginalSource, "");
  event.SetString(cloudevents::kExtResourceId, id);
  // Over MQTT every extension arrives as a String.
  event.SetString(cloudevents::kExtResourceVersion, std::to_string(version));
  event.SetString(cloudevents::kExtMetadata,
                  R"({"name":"openshift-gitops-app","namespace":")" + cluster + R"("})");
  event.SetString(cloudevents::kExtLogTracing, "{}");
  auto data = cloudevents::EncodeManifestBundle(bundle);
  EXPECT_TRUE(data.ok()) << data.status();
  event.data = *data;
  return event;
}

Event CreateEvent(const std::string& cluster, const std::string& id, int version = 1,
                  const std::string& revision = "HEAD", bool with_operation = false) {
  return SpecEvent(cloudevents::kSpecCreateRequestType, cluster, id, version,
                   AppBundle("app-" + id, revision, with_operation));
}

Event DeleteEvent(const std::string& cluster, const std::string& id, int version) {
  Event event;
  event.id = "delete-" + id;
  event.source = std::string(kSource);
  event.type = std::string(cloudevents::kSpecDeleteRequestType);
  event.SetString(cloudevents::kExtClusterName, cluster);
  event.SetString(cloudevents::kExtResourceId, id);
  event.SetString(cloudevents::kExtResourceVersion, std::to_string(version));
  event.SetString(cloudevents::kExtDeletionTimestamp, "2026-06-02T08:00:00.412345678Z");
  return event;
}

Event StatusResync(const std::string& cluster, const cloudevents::ResourceStatusHashList& list,
                   std::string_view source = kSource) {
  Event event;
  event.id = "resync";
  event.source = std::string(source);
  event.type = std::string(cloudevents::kStatusResyncRequestType);
  event.data_content_type = std::string(cloudevents::kJsonContentType);
  event.SetString(cloudevents::kExtClusterName, cluster);
  event.SetString(cloudevents::kExtOriginalSource, "");
  event.data = *cloudevents::EncodeResourceStatusHashList(list);
  return event;
}

// The "status" JsonRaw feedback of the first manifest.
json Feedback(const cloudevents::ManifestBundleStatus& status) {
  EXPECT_FALSE(status.resource_status.empty());
  if (status.resource_status.empty() || status.resource_status[0].status_feedback.empty()) {
    return json();
  }
  const auto& value = status.resource_status[0].status_feedback[0];
  EXPECT_EQ(value.name, "status");
  EXPECT_EQ(value.field_value.type, cloudevents::FieldValueType::kJsonRaw);
  return json::parse(value.field_value.json_raw);
}

class FleetTest : public ::testing::Test {
 protected:
  FleetSettings Settings(int clusters = 2) {
    FleetSettings settings;
    settings.cluster_prefix = "cluster";
    settings.clusters = clusters;
    settings.agent.refresh_min = seconds(120);
    settings.agent.refresh_max = seconds(180);
    return settings;
  }

  double Counter(prometheus::Family<prometheus::Counter>& family, const std::string& label,
                 const std::string& value) {
    return family.Add({{label, value}}).Value();
  }

  testing::FakeClock clock_{std::chrono::system_clock::time_point(seconds(1'780'000'000))};
  prometheus::Registry registry_;
  FleetMetrics metrics_{registry_};
};

TEST_F(FleetTest, CreateIsAnsweredWithAppliedAvailableAndApplicationFeedback) {
  Fleet fleet(Settings(), clock_, metrics_);
  auto replies = fleet.Handle("cluster1", CreateEvent("cluster1", "res-1"));
  ASSERT_EQ(replies.size(), 1u);
  const Event& status = replies[0];
  EXPECT_EQ(status.type, cloudevents::kStatusUpdateRequestType);
  EXPECT_EQ(status.source, "cluster1-work-agent");
  EXPECT_EQ(status.data_content_type, "application/json");
  EXPECT_EQ(*status.ClusterName(), "cluster1");
  EXPECT_EQ(*status.OriginalSource(), kSource);
  EXPECT_EQ(*status.ResourceId(), "res-1");
  EXPECT_EQ(*status.ResourceVersion(), 1);
  EXPECT_TRUE(cloudevents::SequenceId::Parse(*status.SequenceId()).ok());
  EXPECT_EQ(*status.LogTracingJson(), "{}");
  auto meta = cloudevents::ObjectMetaOf(status);
  ASSERT_TRUE(meta.ok()) << meta.status();
  EXPECT_EQ(meta->uid, "res-1");
  EXPECT_EQ(meta->namespace_, "cluster1");
  EXPECT_EQ(meta->labels.at(std::string(kOriginalSourceLabel)), kSource);

  // statushash = SHA-256 of the status as Go serializes it, recomputable from the data.
  const json data = json::parse(*status.data);
  EXPECT_EQ(*status.StatusHash(), *cloudevents::StatusHashOfData(data));
  EXPECT_FALSE(data.contains("manifestBundle"));  // agents do not echo the spec

  auto decoded = cloudevents::ManifestBundleStatusOf(status);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  ASSERT_EQ(decoded->conditions.size(), 2u);
  EXPECT_EQ(decoded->conditions[0].type, "Applied");
  EXPECT_EQ(decoded->conditions[0].status, "True");
  EXPECT_EQ(decoded->conditions[0].observed_generation, 1);
  EXPECT_EQ(decoded->conditions[1].type, "Available");
  EXPECT_EQ(decoded->conditions[1].reason, "ResourcesAvailable");
  ASSERT_EQ(decoded->resource_status.size(), 1u);
  const auto& meta_entry = decoded->resource_status[0].resource_meta;
  EXPECT_EQ(meta_entry.kind, "Application");
  EXPECT_EQ(meta_entry.group, "argoproj.io");
  EXPECT_EQ(meta_entry.version, "v1alpha1");
  EXPECT_EQ(meta_entry.resource, "applications");
  EXPECT_EQ(meta_entry.name, "app-res-1");
  EXPECT_EQ(meta_entry.namespace_, "openshift-gitops");
  ASSERT_EQ(decoded->resource_status[0].conditions.size(), 3u);
  EXPECT_EQ(decoded->resource_status[0].conditions[2].type, "StatusFeedbackSynced");

  const json app_status = Feedback(*decoded);
  EXPECT_EQ(app_status["sync"]["status"], "Synced");
  EXPECT_EQ(app_status["health"]["status"], "Healthy");
  EXPECT_EQ(app_status["reconciledAt"], "2026-05-28T20:26:40Z");
  EXPECT_EQ(app_status["sync"]["comparedTo"]["destination"]["namespace"], "guestbook");
  EXPECT_EQ(app_status["sync"]["revision"].get<std::string>().size(), 40u);
  EXPECT_EQ(app_status["resources"].size(), 2u);
  EXPECT_EQ(app_status["summary"]["images"].size(), 1u);
  EXPECT_FALSE(app_status.contains("operationState"));

  EXPECT_EQ(metrics_.SpecsReceived("create_request").Value(), 1);
  EXPECT_EQ(metrics_.StatusesSent("apply").Value(), 1);
  EXPECT_EQ(metrics_.applications.Value(), 1);
  EXPECT_EQ(metrics_.clusters.Value(), 2);
}

// The end-to-end acknowledgement (the dispatcher's payload.h): the annotation the dispatcher
// stamped comes back as the `dispatchVersion` feedback value, read with an escaped JSONPath.
TEST_F(FleetTest, ReportsTheDispatchVersionAnnotationThroughItsFeedbackPath) {
  Fleet fleet(Settings(), clock_, metrics_);
  cloudevents::ManifestBundle bundle = AppBundle("app-res-1", "HEAD");
  bundle
      .manifests[0]["metadata"]["annotations"]["apps.open-cluster-management.io/dispatch-version"] =
      "4";
  bundle.manifest_configs[0].feedback_rules[0].json_paths.push_back(
      {"dispatchVersion", std::nullopt,
       R"(.metadata.annotations.apps\.open-cluster-management\.io/dispatch-version)"});
  auto replies = fleet.Handle(
      "cluster1", SpecEvent(cloudevents::kSpecCreateRequestType, "cluster1", "res-1", 1, bundle));
  ASSERT_EQ(replies.size(), 1u);
  auto decoded = cloudevents::ManifestBundleStatusOf(replies[0]);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  ASSERT_EQ(decoded->resource_status.size(), 1u);
  const auto& values = decoded->resource_status[0].status_feedback;
  ASSERT_EQ(values.size(), 2u);
  EXPECT_EQ(values[1].name, "dispatchVersion");
  EXPECT_EQ(values[1].field_value.type, cloudevents::FieldValueType::kString);
  EXPECT_EQ(values[1].field_value.string, "4");
}

TEST_F(FleetTest, SpecWithOperationReportsOperationState) {
  Fleet fleet(Settings(), clock_, metrics_);
  auto replies = fleet.Handle("cluster1", CreateEvent("cluster1", "res-1", 1, "v1.2.0", true));
  ASSERT_EQ(replies.size(), 1u);
  const json app_status = Feedback(*cloudevents::ManifestBundleStatusOf(replies[0]));
  ASSERT_TRUE(app_status.contains("operationState"));
  EXPECT_EQ(app_status["operationState"]["phase"], "Succeeded");
  EXPECT_EQ(app_status["operationState"]["operation"]["initiatedBy"]["username"], "admin");
  EXPECT_EQ(app_status["operationState"]["syncResult"]["revision"], app_status["sync"]["revision"]);
}

TEST_F(FleetTest, UpdateIsAnsweredWithANewStatus) {
  Fleet fleet(Settings(), clock_, metrics_);
  auto first = fleet.Handle("cluster1", CreateEvent("cluster1", "res-1", 1, "v1"));
  ASSERT_EQ(first.size(), 1u);
  clock_.Advance(seconds(30));
  auto second = fleet.Handle("cluster1", SpecEvent(cloudevents::kSpecUpdateRequestType, "cluster1",
                                                   "res-1", 2, AppBundle("app-res-1", "v2")));
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(*second[0].ResourceVersion(), 2);
  EXPECT_NE(*second[0].StatusHash(), *first[0].StatusHash());
  auto decoded = cloudevents::ManifestBundleStatusOf(second[0]);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(decoded->conditions[0].observed_generation, 2);
  const json before = Feedback(*cloudevents::ManifestBundleStatusOf(first[0]));
  const json after = Feedback(*decoded);
  EXPECT_NE(after["sync"]["revision"], before["sync"]["revision"]);
  EXPECT_EQ(after["reconciledAt"], "2026-05-28T20:27:10Z");
  // Newer sequence id.
  EXPECT_TRUE(*cloudevents::IsNewerSequenceId(*second[0].SequenceId(), *first[0].SequenceId()));
  EXPECT_EQ(metrics_.SpecsReceived("update_request").Value(), 1);
  EXPECT_EQ(fleet.application_count(), 1u);
}

TEST_F(FleetTest, OlderSpecVersionIsIgnoredAsStale) {
  Fleet fleet(Settings(), clock_, metrics_);
  ASSERT_EQ(fleet.Handle("cluster1", CreateEvent("cluster1", "res-1", 3)).size(), 1u);
  EXPECT_TRUE(fleet
                  .Handle("cluster1", SpecEvent(cloudevents::kSpecUpdateRequestType, "cluster1",
                                                "res-1", 2, AppBundle("app-res-1", "old")))
                  .empty());
  EXPECT_EQ(metrics_.Rejected("stale").Value(), 1);
}

TEST_F(FleetTest, DeleteIsAnsweredWithDeleted) {
  Fleet fleet(Settings(), clock_, metrics_);
  ASSERT_EQ(fleet.Handle("cluster1", CreateEvent("cluster1", "res-1", 4)).size(), 1u);
  auto replies = fleet.Handle("cluster1", DeleteEvent("cluster1", "res-1", 4));
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0].type, cloudevents::kStatusUpdateRequestType);
  EXPECT_EQ(*replies[0].ResourceId(), "res-1");
  EXPECT_EQ(*replies[0].ResourceVersion(), 4);
  EXPECT_EQ(*replies[0].OriginalSource(), kSource);
  auto decoded = cloudevents::ManifestBundleStatusOf(replies[0]);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_TRUE(cloudevents::IsDeleted(*decoded));
  EXPECT_EQ(decoded->conditions[0].reason, "ManifestsDeleted");
  EXPECT_EQ(decoded->conditions[0].message, "The manifests are deleted from the cluster cluster1");
  EXPECT_TRUE(decoded->resource_status.empty());
  EXPECT_EQ(*replies[0].StatusHash(),
            *cloudevents::StatusHashOfData(json::parse(*replies[0].data)));
  EXPECT_EQ(fleet.application_count(), 0u);
  EXPECT_EQ(metrics_.SpecsReceived("delete_request").Value(), 1);
  EXPECT_EQ(metrics_.StatusesSent("delete").Value(), 1);
}

TEST_F(FleetTest, CreateCarryingDeletionTimestampDeletes) {
  Fleet fleet(Settings(), clock_, metrics_);
  ASSERT_EQ(fleet.Handle("cluster1", CreateEvent("cluster1", "res-1")).size(), 1u);
  Event resync_delete = DeleteEvent("cluster1", "res-1", 1);
  resync_delete.type = std::string(cloudevents::kSpecResyncResponseType);
  auto replies = fleet.Handle("cluster1", resync_delete);
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_TRUE(cloudevents::IsDeleted(*cloudevents::ManifestBundleStatusOf(replies[0])));
  // A resync delete of a work we do not hold is a no-op.
  EXPECT_TRUE(fleet.Handle("cluster1", resync_delete).empty());
}

TEST_F(FleetTest, StatusResyncAnswersOnlyWorksWhoseHashDiffers) {
  Fleet fleet(Settings(), clock_, metrics_);
  auto a = fleet.Handle("cluster1", CreateEvent("cluster1", "res-a"));
  auto b = fleet.Handle("cluster1", CreateEvent("cluster1", "res-b"));
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);

  cloudevents::ResourceStatusHashList list;
  list.status_hashes.push_back({"res-a", *a[0].StatusHash()});
  list.status_hashes.push_back({"res-b", "0000"});
  list.status_hashes.push_back({"res-unknown", "1111"});
  auto replies = fleet.Handle("cluster1", StatusResync("cluster1", list));
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0].type, cloudevents::kStatusResyncResponseType);
  EXPECT_EQ(*replies[0].ResourceId(), "res-b");
  EXPECT_EQ(*replies[0].StatusHash(), *b[0].StatusHash());

  // An empty list means everything; another source's request gets nothing.
  EXPECT_EQ(fleet.Handle("cluster1", StatusResync("cluster1", {})).size(), 2u);
  EXPECT_TRUE(fleet.Handle("cluster1", StatusResync("cluster1", {}, "other-source")).empty());
  EXPECT_EQ(metrics_.status_resyncs_answered.Value(), 3);
  EXPECT_EQ(metrics_.StatusesSent("resync").Value(), 3);
}

TEST_F(FleetTest, BroadcastStatusResyncReachesEveryCluster) {
  Fleet fleet(Settings(3), clock_, metrics_);
  ASSERT_EQ(fleet.Handle("cluster1", CreateEvent("cluster1", "res-1")).size(), 1u);
  ASSERT_EQ(fleet.Handle("cluster3", CreateEvent("cluster3", "res-3")).size(), 1u);
  auto replies = fleet.Handle("", StatusResync("", {}));
  ASSERT_EQ(replies.size(), 2u);
  EXPECT_EQ(*replies[0].ClusterName(), "cluster1");
  EXPECT_EQ(*replies[1].ClusterName(), "cluster3");
}

TEST_F(FleetTest, RefreshChurnStaysWithinTheConfiguredBounds) {
  Fleet fleet(Settings(1), clock_, metrics_);
  const auto start = clock_.MonotonicNow();
  for (int i = 0; i < 10; ++i) {
    ASSERT_EQ(fleet.Handle("cluster1", CreateEvent("cluster1", "res-" + std::to_string(i))).size(),
              1u);
  }
  ClusterAgent* agent = fleet.FindForTest("cluster1");
  ASSERT_NE(agent, nullptr);
  bool jittered = false;
  std::optional<std::chrono::steady_clock::time_point> first;
  for (int i = 0; i < 10; ++i) {
    auto next = agent->NextRefreshForTest("res-" + std::to_string(i));
    ASSERT_TRUE(next.has_value());
    EXPECT_GE(*next - start, seconds(120));
    EXPECT_LE(*next - start, seconds(180));
    if (first.has_value() && *first != *next) {
      jittered = true;
    }
    first = next;
  }
  EXPECT_TRUE(jittered) << "refresh times should be jittered per Application";

  clock_.Advance(seconds(119));
  EXPECT_TRUE(fleet.Tick().empty());
  clock_.Advance(seconds(62));  // t = 181 s: every Application refreshed exactly once
  auto refreshed = fleet.Tick();
  ASSERT_EQ(refreshed.size(), 10u);
  const json app_status = Feedback(*cloudevents::ManifestBundleStatusOf(refreshed[0]));
  EXPECT_EQ(app_status["reconciledAt"], "2026-05-28T20:29:41Z");
  EXPECT_EQ(metrics_.StatusesSent("refresh").Value(), 10);
  EXPECT_TRUE(fleet.Tick().empty());
  // The next round is again 120-180 s later.
  clock_.Advance(seconds(119));
  EXPECT_TRUE(fleet.Tick().empty());
  clock_.Advance(seconds(61));
  EXPECT_EQ(fleet.Tick().size(), 10u);

  // Postponed (the simulator's intake is backlogged): no status, the next round is one interval
  // later, and transitions would still be reported.
  clock_.Advance(seconds(181));
  EXPECT_TRUE(fleet.Tick(/*postpone_refreshes=*/true).empty());
  EXPECT_EQ(metrics_.refreshes_postponed.Value(), 10);
  EXPECT_EQ(metrics_.StatusesSent("refresh").Value(), 20);
  EXPECT_TRUE(fleet.Tick().empty());  // not due again at once
  clock_.Advance(seconds(181));
  EXPECT_EQ(fleet.Tick().size(), 10u);
  EXPECT_EQ(metrics_.StatusesSent("refresh").Value(), 30);
}

TEST_F(FleetTest, TransitionsFollowTheConfiguredRate) {
  FleetSettings settings = Settings(2);
  settings.agent.refresh_max = seconds(0);  // isolate transitions
  settings.changes_per_minute = 10;         // 5 per cluster per minute
  Fleet fleet(settings, clock_, metrics_);
  for (int i = 0; i < 3; ++i) {
    for (const std::string cluster : {"cluster1", "cluster2"}) {
      ASSERT_EQ(
          fleet.Handle(cluster, CreateEvent(cluster, cluster + "-res-" + std::to_string(i))).size(),
          1u);
    }
  }
  int total = 0;
  int unhealthy = 0;
  for (int second = 0; second < 300; ++second) {
    clock_.Advance(seconds(1));
    for (const Event& event : fleet.Tick()) {
      ++total;
      const json app = Feedback(*cloudevents::ManifestBundleStatusOf(event));
      if (app["sync"]["status"] != "Synced" || app["health"]["status"] != "Healthy") {
        ++unhealthy;
      }
    }
  }
  // 5 minutes at 10/min: Poisson with mean 50 (sd ~7); the seed makes it reproducible.
  EXPECT_GT(total, 25);
  EXPECT_LT(total, 75);
  EXPECT_GT(unhealthy, 0);
  EXPECT_LT(unhealthy, total);
  EXPECT_EQ(metrics_.StatusesSent("transition").Value(), total);
}

TEST_F(FleetTest, MalformedEventsAreCountedAndDropped) {
  Fleet fleet(Settings(), clock_, metrics_);
  // Undecodable message.
  EXPECT_TRUE(fleet.Handle("cluster1", absl::InvalidArgumentError("no ce-specversion")).empty());
  // No resourceid.
  Event no_id = CreateEvent("cluster1", "res-1");
  no_id.RemoveExtension(cloudevents::kExtResourceId);
  EXPECT_TRUE(fleet.Handle("cluster1", no_id).empty());
  // Data that is not a ManifestBundle.
  Event bad_data = CreateEvent("cluster1", "res-1");
  bad_data.data = "{\"manifests\": 42}";
  EXPECT_TRUE(fleet.Handle("cluster1", bad_data).empty());
  // Empty manifest list (the agent's own validation).
  Event empty = SpecEvent(cloudevents::kSpecCreateRequestType, "cluster1", "res-1", 1, {});
  EXPECT_TRUE(fleet.Handle("cluster1", empty).empty());
  // Bad resourceversion, bad metadata, bad type.
  Event bad_version = CreateEvent("cluster1", "res-1");
  bad_version.SetString(cloudevents::kExtResourceVersion, "one");
  EXPECT_TRUE(fleet.Handle("cluster1", bad_version).empty());
  Event bad_meta = CreateEvent("cluster1", "res-1");
  bad_meta.SetString(cloudevents::kExtMetadata, "[1,2]");
  EXPECT_TRUE(fleet.Handle("cluster1", bad_meta).empty());
  Event bad_type = CreateEvent("cluster1", "res-1");
  bad_type.type = "nonsense";
  EXPECT_TRUE(fleet.Handle("cluster1", bad_type).empty());
  // A status resync without a payload.
  Event no_payload = StatusResync("cluster1", {});
  no_payload.data.reset();
  EXPECT_TRUE(fleet.Handle("cluster1", no_payload).empty());

  EXPECT_EQ(metrics_.Rejected("malformed").Value(), 8);
  EXPECT_EQ(fleet.application_count(), 0u);
  // The agent still works afterwards.
  EXPECT_EQ(fleet.Handle("cluster1", CreateEvent("cluster1", "res-1")).size(), 1u);
}

TEST_F(FleetTest, EventsForOtherClustersAreNotApplied) {
  Fleet fleet(Settings(), clock_, metrics_);
  EXPECT_TRUE(fleet.Handle("cluster9", CreateEvent("cluster9", "res-1")).empty());
  EXPECT_EQ(metrics_.Rejected("unknown_cluster").Value(), 1);
  // Topic says cluster1, the event says cluster2: the agent ignores it (§1.4).
  EXPECT_TRUE(fleet.Handle("cluster1", CreateEvent("cluster2", "res-1")).empty());
  EXPECT_EQ(metrics_.Rejected("other_cluster").Value(), 1);
  // Without a topic cluster (Kafka), the clustername extension routes.
  EXPECT_EQ(fleet.Handle("", CreateEvent("cluster2", "res-1")).size(), 1u);
  EXPECT_EQ(fleet.FindForTest("cluster2")->work_count(), 1u);
}

TEST_F(FleetTest, SpecResyncRequestsListEveryHeldWork) {
  Fleet fleet(Settings(2), clock_, metrics_);
  ASSERT_EQ(fleet.Handle("cluster1", CreateEvent("cluster1", "res-1", 7)).size(), 1u);
  auto requests = fleet.SpecResyncRequests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].type, cloudevents::kSpecResyncRequestType);
  EXPECT_EQ(requests[0].source, "cluster1-work-agent");
  EXPECT_EQ(*requests[0].ClusterName(), "cluster1");
  EXPECT_EQ(*requests[0].OriginalSource(), "");
  auto list = cloudevents::DecodeResourceVersionList(*requests[0].data);
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->resource_versions.size(), 1u);
  EXPECT_EQ(list->resource_versions[0].resource_id, "res-1");
  EXPECT_EQ(list->resource_versions[0].resource_version, 7);
  EXPECT_EQ(*requests[1].data, R"({"resourceVersions":[]})");
  EXPECT_EQ(metrics_.spec_resyncs_sent.Value(), 2);
}

// The snapshot is the fault harness's ground truth (tests/fault): per work the spec held, the
// status last reported, how many spec events came and how many of them were re-deliveries; and
// the deletions the agent confirmed.
TEST_F(FleetTest, SnapshotListsHeldSpecsLastStatusesDuplicatesAndDeletions) {
  Fleet fleet(Settings(), clock_, metrics_);
  ASSERT_EQ(fleet.Handle("cluster1", CreateEvent("cluster1", "res-1", 1, "v1")).size(), 1u);
  clock_.Advance(seconds(5));
  // Version 2 arrives, then again (a re-delivery), then version 1 (older: ignored).
  const Event update = SpecEvent(cloudevents::kSpecUpdateRequestType, "cluster1", "res-1", 2,
                                 AppBundle("app-res-1", "v2"));
  auto applied = fleet.Handle("cluster1", update);
  ASSERT_EQ(applied.size(), 1u);
  auto again = fleet.Handle("cluster1", update);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_TRUE(fleet
                  .Handle("cluster1", SpecEvent(cloudevents::kSpecUpdateRequestType, "cluster1",
                                                "res-1", 1, AppBundle("app-res-1", "v1")))
                  .empty());
  ASSERT_EQ(fleet.Handle("cluster2", CreateEvent("cluster2", "res-2", 1)).size(), 1u);
  ASSERT_EQ(fleet.Handle("cluster2", DeleteEvent("cluster2", "res-2", 1)).size(), 1u);
  // A delete of a work never received is confirmed too.
  ASSERT_EQ(fleet.Handle("cluster2", DeleteEvent("cluster2", "res-9", 3)).size(), 1u);

  const json snapshot = fleet.Snapshot();
  EXPECT_EQ(snapshot["applications"], 1);
  ASSERT_TRUE(snapshot["clusters"].contains("cluster1"));
  const json& works = snapshot["clusters"]["cluster1"]["works"];
  ASSERT_EQ(works.size(), 1u);
  const json& work = works[0];
  EXPECT_EQ(work["id"], "res-1");
  EXPECT_EQ(work["version"], 2);
  EXPECT_EQ(work["work"], "openshift-gitops-app");
  EXPECT_EQ(work["source"], kSource);
  ASSERT_EQ(work["manifests"].size(), 1u);
  EXPECT_EQ(work["manifests"][0]["kind"], "Application");
  EXPECT_EQ(work["manifests"][0]["name"], "app-res-1");
  EXPECT_EQ(work["manifests"][0]["namespace"], "openshift-gitops");
  EXPECT_EQ(work["manifests"][0]["spec"]["source"]["targetRevision"], "v2");
  EXPECT_EQ(work["specs_received"], 4);
  EXPECT_EQ(work["duplicate_specs"], 2) << "the re-delivered v2 and the older v1";
  // The last status sent: the re-delivery's.
  EXPECT_EQ(work["status_hash"], *again[0].StatusHash());
  EXPECT_DOUBLE_EQ(work["status_at"].get<double>(), 1'780'000'005.0);
  EXPECT_EQ(work["sync"], "Synced");
  EXPECT_EQ(work["health"], "Healthy");
  const json reported = Feedback(*cloudevents::ManifestBundleStatusOf(again[0]));
  EXPECT_EQ(work["revision"], reported["sync"]["revision"]);
  EXPECT_TRUE(snapshot["clusters"]["cluster1"]["deleted"].empty());

  const json& cluster2 = snapshot["clusters"]["cluster2"];
  EXPECT_TRUE(cluster2["works"].empty());
  ASSERT_EQ(cluster2["deleted"].size(), 2u);
  EXPECT_EQ(cluster2["deleted"][0]["id"], "res-2");
  EXPECT_EQ(cluster2["deleted"][0]["work"], "openshift-gitops-app");
  EXPECT_EQ(cluster2["deleted"][0]["version"], 1);
  EXPECT_EQ(cluster2["deleted"][0]["confirmations"], 1);
  EXPECT_EQ(cluster2["deleted"][1]["id"], "res-9");
  EXPECT_EQ(cluster2["deleted"][1]["version"], 3);
}

TEST(ClusterNameTest, PadsTheIndexToTheConfiguredDigits) {
  EXPECT_EQ(ClusterName("cluster", 7), "cluster7");
  EXPECT_EQ(ClusterName("cluster-", 7, 4), "cluster-0007");
  EXPECT_EQ(ClusterName("cluster-", 12345, 4), "cluster-12345");
}

TEST_F(FleetTest, ZeroPaddedClusterNamesRouteEvents) {
  FleetSettings settings = Settings(2);
  settings.cluster_prefix = "cluster-";
  settings.cluster_digits = 4;
  Fleet fleet(settings, clock_, metrics_);
  EXPECT_EQ(fleet.Handle("cluster-0002", CreateEvent("cluster-0002", "res-1")).size(), 1u);
  ASSERT_NE(fleet.FindForTest("cluster-0002"), nullptr);
  EXPECT_EQ(fleet.FindForTest("cluster-0002")->work_count(), 1u);
  EXPECT_EQ(fleet.FindForTest("cluster2"), nullptr);
}

}  // namespace
}  // namespace mmi::fleet_sim
