#include "services/status-sink/manifests/application_status.h"

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "libs/cloudevents/event.h"
#include "libs/cloudevents/manifest_bundle.h"
#include "libs/cloudevents/mqtt_codec.h"
#include "libs/cloudevents/testing/captured.h"
#include "nlohmann/json.hpp"
#include "services/status-sink/manifests/testing/feedback_values.h"

namespace mmi::status_sink {
namespace {

using cloudevents::Condition;
using cloudevents::FeedbackValue;
using cloudevents::ManifestBundleStatus;
using cloudevents::ManifestCondition;
using std::chrono::seconds;
using std::chrono::system_clock;
using testing::Int;
using testing::Str;

const system_clock::time_point kDispatched =
    system_clock::from_time_t(1'800'000'000);  // 2027-01-15T08:00:00Z
const system_clock::time_point kApplied = kDispatched + seconds(4);
const system_clock::time_point kNow = kDispatched + seconds(30);

nlohmann::json DeploymentManifest() {
  return {
      {"apiVersion", "apps/v1"},
      {"kind", "Deployment"},
      {"metadata", {{"name", "web"}, {"namespace", "shop"}}},
      {"spec",
       {{"replicas", 2},
        {"template", {{"spec", {{"containers", {{{"name", "web"}, {"image", "nginx:1.27"}}}}}}}}}}};
}
nlohmann::json ServiceManifest() {
  return {{"apiVersion", "v1"},
          {"kind", "Service"},
          {"metadata", {{"name", "web"}, {"namespace", "shop"}}},
          {"spec", {{"type", "ClusterIP"}}}};
}
nlohmann::json ConfigMapManifest() {  // no namespace in the render: the agent's report has it
  return {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", "settings"}}}};
}
nlohmann::json HookManifest() {
  return {{"apiVersion", "batch/v1"},
          {"kind", "Job"},
          {"metadata",
           {{"name", "migrate"},
            {"namespace", "shop"},
            {"annotations", {{"argocd.argoproj.io/hook", "PreSync"}}}}}};
}

RenderedBundle Bundle(std::int64_t generation = 3) {
  return RenderedBundle{.manifests = {DeploymentManifest(), ServiceManifest(), ConfigMapManifest()},
                        .revision = "9f2c4e1",
                        .generation = generation,
                        .dispatched_at = kDispatched};
}

Condition Cond(std::string type, std::string status, std::int64_t generation,
               std::string message = "") {
  return Condition{.type = std::move(type),
                   .status = std::move(status),
                   .observed_generation = generation,
                   .last_transition_time = kApplied,
                   .reason = "",
                   .message = std::move(message)};
}

ManifestCondition Reported(int ordinal, std::string group, std::string version, std::string kind,
                           std::string resource, std::string ns, std::string name,
                           std::vector<Condition> conditions,
                           std::vector<FeedbackValue> feedback = {}) {
  return ManifestCondition{.resource_meta = {.ordinal = ordinal,
                                             .group = std::move(group),
                                             .version = std::move(version),
                                             .kind = std::move(kind),
                                             .resource = std::move(resource),
                                             .name = std::move(name),
                                             .namespace_ = std::move(ns)},
                           .status_feedback = std::move(feedback),
                           .conditions = std::move(conditions)};
}

// What the agent reports once it applied generation `applied_generation` of Bundle(); the
// Deployment has `available` of 2 replicas available.
ManifestBundleStatus AgentStatus(std::int64_t applied_generation, std::int64_t available = 2) {
  const std::vector<Condition> ok = {
      Cond("Applied", "True", applied_generation, "Apply manifest complete"),
      Cond("Available", "True", 0), Cond("StatusFeedbackSynced", "True", 0)};
  ManifestBundleStatus status;
  status.conditions = {Cond("Applied", "True", applied_generation)};
  status.resource_status = {
      Reported(
          0, "apps", "v1", "Deployment", "deployments", "shop", "web", ok,
          {Int("ReadyReplicas", available), Int("Replicas", 2), Int("AvailableReplicas", available),
           Int("Generation", 1), Int("ObservedGeneration", 1), Int("UpdatedReplicas", 2),
           Int("DesiredReplicas", 2)}),
      Reported(1, "", "v1", "Service", "services", "shop", "web", ok,
               {Str("ServiceType", "ClusterIP")}),
      Reported(2, "", "v1", "ConfigMap", "configmaps", "shop", "settings", ok),
  };
  return status;
}

ManifestStatusInput Input(std::optional<RenderedBundle> bundle, const ManifestBundleStatus* status,
                          std::int64_t report_generation) {
  ManifestStatusInput input;
  input.bundle = std::move(bundle);
  if (status != nullptr) {
    input.report = AgentReport{.status = status, .generation = report_generation};
  }
  input.source = {
      {"repoURL", "https://git.example/shop.git"}, {"path", "web"}, {"targetRevision", "main"}};
  input.destination = {{"server", "https://kubernetes.default.svc"}, {"namespace", "shop"}};
  input.source_type = "Directory";
  input.now = kNow;
  return input;
}

nlohmann::json StatusOf(const ManifestStatusInput& input) {
  absl::StatusOr<nlohmann::json> status = ApplicationStatusOf(input);
  EXPECT_TRUE(status.ok()) << status.status();
  return status.ok() ? *status : nlohmann::json();
}

TEST(ApplicationStatusTest, AnAppliedHealthyBundleIsTheWholeArgoCdStatus) {
  const ManifestBundleStatus agent = AgentStatus(3);
  const nlohmann::json want = nlohmann::json::parse(R"json({
    "sync": {
      "status": "Synced",
      "revision": "9f2c4e1",
      "comparedTo": {
        "source": {"repoURL": "https://git.example/shop.git", "path": "web", "targetRevision": "main"},
        "destination": {"server": "https://kubernetes.default.svc", "namespace": "shop"}
      }
    },
    "health": {"status": "Healthy"},
    "resources": [
      {"version": "v1", "kind": "ConfigMap", "namespace": "shop", "name": "settings", "status": "Synced"},
      {"version": "v1", "kind": "Service", "namespace": "shop", "name": "web", "status": "Synced",
       "health": {"status": "Healthy"}},
      {"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "shop", "name": "web",
       "status": "Synced", "health": {"status": "Healthy"}}
    ],
    "operationState": {
      "operation": {"sync": {"revision": "9f2c4e1"}, "initiatedBy": {"automated": true}},
      "phase": "Succeeded",
      "message": "successfully synced (all tasks run)",
      "startedAt": "2027-01-15T08:00:00Z",
      "finishedAt": "2027-01-15T08:00:04Z",
      "syncResult": {
        "revision": "9f2c4e1",
        "source": {"repoURL": "https://git.example/shop.git", "path": "web", "targetRevision": "main"},
        "resources": [
          {"group": "", "version": "v1", "kind": "ConfigMap", "namespace": "shop", "name": "settings",
           "status": "Synced", "message": "Apply manifest complete", "syncPhase": "Sync"},
          {"group": "", "version": "v1", "kind": "Service", "namespace": "shop", "name": "web",
           "status": "Synced", "message": "Apply manifest complete", "syncPhase": "Sync"},
          {"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "shop", "name": "web",
           "status": "Synced", "message": "Apply manifest complete", "syncPhase": "Sync"}
        ]
      }
    },
    "summary": {"images": ["nginx:1.27"]},
    "reconciledAt": "2027-01-15T08:00:30Z",
    "sourceType": "Directory"
  })json");
  EXPECT_EQ(StatusOf(Input(Bundle(), &agent, 3)), want);
}

// The facts each rule decides, for the table below.
struct Facts {
  std::string sync;
  std::string health;
  std::vector<std::string> resource_sync;    // per resources[] entry ("" = none)
  std::vector<std::string> resource_health;  // per resources[] entry ("" = none)
  std::string phase;                         // operationState.phase, "" = absent
  std::vector<std::string> conditions;       // types
};

Facts FactsOf(const nlohmann::json& status) {
  Facts facts;
  facts.sync = status["sync"]["status"];
  facts.health = status["health"]["status"];
  for (const nlohmann::json& r : status["resources"]) {
    facts.resource_sync.push_back(r.value("status", ""));
    facts.resource_health.push_back(r.contains("health") ? r["health"]["status"].get<std::string>()
                                                         : "");
  }
  if (status.contains("operationState")) {
    facts.phase = status["operationState"]["phase"];
  }
  for (const nlohmann::json& c : status.value("conditions", nlohmann::json::array())) {
    facts.conditions.push_back(c["type"]);
  }
  return facts;
}

void ExpectFacts(const nlohmann::json& status, const Facts& want, const std::string& what) {
  const Facts got = FactsOf(status);
  EXPECT_EQ(got.sync, want.sync) << what;
  EXPECT_EQ(got.health, want.health) << what;
  EXPECT_EQ(got.resource_sync, want.resource_sync) << what;
  EXPECT_EQ(got.resource_health, want.resource_health) << what;
  EXPECT_EQ(got.phase, want.phase) << what;
  EXPECT_EQ(got.conditions, want.conditions) << what;
}

TEST(ApplicationStatusTest, EachRuleDecidesItsFields) {
  const ManifestBundleStatus applied = AgentStatus(3);
  const ManifestBundleStatus old_generation = AgentStatus(2);
  const ManifestBundleStatus rolling_out = AgentStatus(3, /*available=*/1);
  ManifestBundleStatus failed = AgentStatus(3);
  failed.resource_status[1].conditions = {
      Cond("Applied", "False", 3, "Failed to apply manifest: services \"web\" is forbidden")};
  ManifestBundleStatus deleting;  // only a work-level condition, as in captured line 42
  deleting.conditions = {Cond("Deleting", "True", 3)};

  struct Row {
    std::string what;
    ManifestStatusInput input;
    Facts want;
  };
  ManifestStatusInput render_failed = Input(Bundle(), &applied, 3);
  render_failed.render_error = "rpc error: code = Unknown desc = kustomize build failed";
  ManifestStatusInput never_rendered = Input(std::nullopt, nullptr, 0);
  never_rendered.render_error = "repository not found";

  const std::vector<Row> rows = {
      {"not reported yet",
       Input(Bundle(), nullptr, 0),
       {"OutOfSync",
        "Missing",
        {"OutOfSync", "OutOfSync", "OutOfSync"},
        {"Missing", "Missing", "Missing"},
        "Running",
        {}}},
      {"applied and healthy",
       Input(Bundle(), &applied, 3),
       {"Synced",
        "Healthy",
        {"Synced", "Synced", "Synced"},
        {"", "Healthy", "Healthy"},
        "Succeeded",
        {}}},
      {"still rolling out",
       Input(Bundle(), &rolling_out, 3),
       {"Synced",
        "Progressing",
        {"Synced", "Synced", "Synced"},
        {"", "Healthy", "Progressing"},
        "Succeeded",
        {}}},
      {"agent still on the previous generation",
       Input(Bundle(), &old_generation, 2),
       {"OutOfSync",
        "Healthy",
        {"OutOfSync", "OutOfSync", "OutOfSync"},
        {"", "Healthy", "Healthy"},
        "Running",
        {}}},
      {"new generation reported, resources not yet applied",
       Input(Bundle(), &old_generation, 3),
       {"OutOfSync",
        "Healthy",
        {"OutOfSync", "OutOfSync", "OutOfSync"},
        {"", "Healthy", "Healthy"},
        "Running",
        {}}},
      {"one resource failed to apply",
       Input(Bundle(), &failed, 3),
       {"OutOfSync",
        "Healthy",
        {"Synced", "OutOfSync", "Synced"},
        {"", "Missing", "Healthy"},
        "Failed",
        {"SyncError"}}},
      {"render failed: old bundle stays, error shows",
       render_failed,
       {"Unknown",
        "Healthy",
        {"Synced", "Synced", "Synced"},
        {"", "Healthy", "Healthy"},
        "Succeeded",
        {"ComparisonError"}}},
      {"never rendered", never_rendered, {"Unknown", "Healthy", {}, {}, "", {"ComparisonError"}}},
      {"work deleting, nothing reported per resource",
       Input(Bundle(), &deleting, 3),
       {"OutOfSync",
        "Missing",
        {"OutOfSync", "OutOfSync", "OutOfSync"},
        {"Missing", "Missing", "Missing"},
        "Running",
        {}}},
  };
  for (const Row& row : rows) {
    ExpectFacts(StatusOf(row.input), row.want, row.what);
  }
}

// The Application CRD requires every identity member of a syncResult entry (Argo CD's
// ResourceResult has no omitempty): the hub refuses a status whose core, cluster-scoped
// Namespace leaves out group or namespace. resources[] (ResourceStatus) omits them.
TEST(ApplicationStatusTest, SyncResultsCarryEmptyGroupAndNamespace) {
  RenderedBundle bundle = Bundle();
  bundle.manifests.push_back(
      {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "shop"}}}});
  ManifestBundleStatus agent = AgentStatus(3);
  agent.resource_status.push_back(Reported(
      3, "", "v1", "Namespace", "namespaces", "", "shop",
      {Cond("Applied", "True", 3, "Apply manifest complete"), Cond("Available", "True", 0)}));
  const nlohmann::json status = StatusOf(Input(std::move(bundle), &agent, 3));
  auto namespace_entry = [](const nlohmann::json& entries) {
    for (const nlohmann::json& entry : entries) {
      if (entry.value("kind", "") == "Namespace") {
        return entry;
      }
    }
    return nlohmann::json();
  };
  EXPECT_EQ(namespace_entry(status["operationState"]["syncResult"]["resources"]),
            (nlohmann::json{{"group", ""},
                            {"version", "v1"},
                            {"kind", "Namespace"},
                            {"namespace", ""},
                            {"name", "shop"},
                            {"status", "Synced"},
                            {"message", "Apply manifest complete"},
                            {"syncPhase", "Sync"}}));
  const nlohmann::json shown = namespace_entry(status["resources"]);
  EXPECT_FALSE(shown.contains("group"));
  EXPECT_FALSE(shown.contains("namespace"));
}

TEST(ApplicationStatusTest, ErrorsAreWordedAsArgoCdWordsThem) {
  ManifestBundleStatus failed = AgentStatus(3);
  failed.resource_status[1].conditions = {
      Cond("Applied", "False", 3, "Failed to apply manifest: services \"web\" is forbidden")};
  ManifestStatusInput input = Input(Bundle(), &failed, 3);
  input.render_error = "rpc error: code = DeadlineExceeded desc = context deadline exceeded";
  const nlohmann::json status = StatusOf(input);
  ASSERT_EQ(status["conditions"].size(), 2U);
  EXPECT_EQ(status["conditions"][0],
            (nlohmann::json{{"type", "ComparisonError"},
                            {"message",
                             "Failed to load target state: rpc error: code = DeadlineExceeded "
                             "desc = context deadline exceeded"},
                            {"lastTransitionTime", "2027-01-15T08:00:30Z"}}));
  EXPECT_EQ(status["conditions"][1]["message"],
            "Failed sync attempt to 9f2c4e1: one or more objects failed to apply, reason: "
            "Service/shop/web: Failed to apply manifest: services \"web\" is forbidden");
  EXPECT_EQ(status["operationState"]["message"],
            "one or more objects failed to apply, reason: Failed to apply manifest: services "
            "\"web\" is forbidden");
  const nlohmann::json& results = status["operationState"]["syncResult"]["resources"];
  EXPECT_EQ(results[1]["status"], "SyncFailed");
  EXPECT_EQ(results[1]["name"], "web");
}

TEST(ApplicationStatusTest, ManyApplyFailuresNameThreeAndCountTheRest) {
  RenderedBundle bundle = Bundle();
  ManifestBundleStatus agent = AgentStatus(3);
  bundle.manifests.clear();
  agent.resource_status.clear();
  for (int i = 0; i < 5; ++i) {
    const std::string name = "cm" + std::to_string(i);
    bundle.manifests.push_back({{"apiVersion", "v1"},
                                {"kind", "ConfigMap"},
                                {"metadata", {{"name", name}, {"namespace", "shop"}}}});
    agent.resource_status.push_back(Reported(i, "", "v1", "ConfigMap", "configmaps", "shop", name,
                                             {Cond("Applied", "False", 3, "quota")}));
  }
  const nlohmann::json status = StatusOf(Input(bundle, &agent, 3));
  EXPECT_EQ(status["conditions"][0]["message"],
            "Failed sync attempt to 9f2c4e1: one or more objects failed to apply, reason: "
            "ConfigMap/shop/cm0: quota, ConfigMap/shop/cm1: quota, ConfigMap/shop/cm2: quota "
            "(and 2 more)");
}

TEST(ApplicationStatusTest, HooksShowOnlyOnceTheAgentReportsThemAndNeverCount) {
  RenderedBundle bundle = Bundle();
  bundle.manifests.push_back(HookManifest());
  ManifestBundleStatus agent = AgentStatus(3);
  ExpectFacts(StatusOf(Input(bundle, &agent, 3)),
              {"Synced",
               "Healthy",
               {"Synced", "Synced", "Synced"},
               {"", "Healthy", "Healthy"},
               "Succeeded",
               {}},
              "hook not reported");
  agent.resource_status.push_back(Reported(3, "batch", "v1", "Job", "jobs", "shop", "migrate",
                                           {Cond("Applied", "False", 3, "failed")}));
  agent.resource_status.back().conditions.push_back(Cond("Available", "True", 0));
  const nlohmann::json status = StatusOf(Input(bundle, &agent, 3));
  ExpectFacts(status,
              {"Synced",
               "Healthy",
               {"Synced", "Synced", "Synced", ""},
               {"", "Healthy", "Healthy", ""},
               "Succeeded",
               {}},
              "hook reported");
  EXPECT_EQ(status["resources"][3]["hook"], true);
  EXPECT_EQ(status["resources"][3]["kind"], "Job");
}

TEST(ApplicationStatusTest, SyncWavesAndIgnoredHealthComeFromAnnotations) {
  RenderedBundle bundle = Bundle();
  bundle.manifests[0]["metadata"]["annotations"] = {
      {"argocd.argoproj.io/sync-wave", "-2"}, {"argocd.argoproj.io/ignore-healthcheck", "true"}};
  const ManifestBundleStatus agent = AgentStatus(3, /*available=*/0);
  const nlohmann::json status = StatusOf(Input(bundle, &agent, 3));
  const nlohmann::json& deployment = status["resources"][2];
  EXPECT_EQ(deployment["syncWave"], -2);
  EXPECT_FALSE(deployment.contains("health"));
  EXPECT_EQ(status["health"]["status"], "Healthy");  // the unavailable Deployment is ignored
}

TEST(ApplicationStatusTest, BadInputIsAClearError) {
  const ManifestBundleStatus agent = AgentStatus(3);
  struct Row {
    nlohmann::json manifest;
    std::string message;
  };
  const std::vector<Row> rows = {
      {"text", "bundle.manifests[3] is not an object"},
      {{{"kind", "Pod"}, {"metadata", {{"name", "p"}}}},
       "bundle.manifests[3].apiVersion is missing"},
      {{{"apiVersion", "v1"}, {"metadata", {{"name", "p"}}}},
       "bundle.manifests[3].kind is missing"},
      {{{"apiVersion", "v1"}, {"kind", "Pod"}}, "bundle.manifests[3].metadata.name is missing"},
  };
  for (const Row& row : rows) {
    RenderedBundle bundle = Bundle();
    bundle.manifests.push_back(row.manifest);
    const absl::StatusOr<nlohmann::json> status = ApplicationStatusOf(Input(bundle, &agent, 3));
    EXPECT_EQ(status.status(), absl::InvalidArgumentError(row.message));
  }
  ManifestStatusInput no_status = Input(Bundle(), nullptr, 0);
  no_status.report = AgentReport{.status = nullptr, .generation = 3};
  EXPECT_EQ(ApplicationStatusOf(no_status).status(),
            absl::InvalidArgumentError("report.status is null"));
}

TEST(ApplicationStatusTest, WrongFeedbackTypesMakeTheResourceUnknownNotACrash) {
  ManifestBundleStatus agent = AgentStatus(3);
  agent.resource_status[0].status_feedback = {Str("UpdatedReplicas", "two")};
  const nlohmann::json status = StatusOf(Input(Bundle(), &agent, 3));
  EXPECT_EQ(
      status["resources"][2]["health"],
      (nlohmann::json{{"status", "Unknown"},
                      {"message", "status feedback \"UpdatedReplicas\" is String, want Integer"}}));
  EXPECT_EQ(status["health"]["status"], "Unknown");
}

// --- the real agent's statuses (../shared/spec/samples/captured/agentevents.jsonl) --------------

// The manifests the agents received, by resource id (sourceevents.jsonl).
std::map<std::string, std::vector<nlohmann::json>> CapturedManifests() {
  std::map<std::string, std::vector<nlohmann::json>> out;
  auto records = cloudevents::testing::ReadCaptured(cloudevents::testing::kCapturedSourceEvents);
  EXPECT_TRUE(records.ok()) << records.status();
  if (!records.ok()) {
    return out;
  }
  for (const auto& record : *records) {
    auto event = cloudevents::DecodeMqtt(record.message);
    if (!event.ok() || !event->data.has_value()) {
      continue;
    }
    auto bundle = cloudevents::ManifestBundleOf(*event);
    auto id = event->GetString(cloudevents::kExtResourceId);
    if (bundle.ok() && id.ok() && !bundle->manifests.empty()) {
      out[*id] = bundle->manifests;
    }
  }
  return out;
}

TEST(ApplicationStatusTest, CapturedAgentStatusesMapAsArgoCdWouldShowThem) {
  struct Row {
    int line;
    Facts want;
  };
  // The one manifest is an argoproj.io Application: a kind without Argo CD health.
  const std::vector<Row> rows = {
      {1, {"Synced", "Healthy", {"Synced"}, {""}, "Succeeded", {}}},  // Applied only
      {2, {"Synced", "Healthy", {"Synced"}, {""}, "Succeeded", {}}},  // + Available, no feedback
      {3, {"Synced", "Healthy", {"Synced"}, {""}, "Succeeded", {}}},  // + JsonRaw feedback
      {15, {"OutOfSync", "Healthy", {"OutOfSync"}, {""}, "Running", {}}},  // gen 2, applied 1
      {16, {"Synced", "Healthy", {"Synced"}, {""}, "Succeeded", {}}},      // applied 2
      {21, {"OutOfSync", "Missing", {"OutOfSync"}, {"Missing"}, "Failed", {"SyncError"}}},
      {22, {"OutOfSync", "Missing", {"OutOfSync"}, {"Missing"}, "Failed", {"SyncError"}}},
      {23, {"Synced", "Healthy", {"Synced"}, {""}, "Succeeded", {}}},  // applied, not yet Available
      {42, {"OutOfSync", "Missing", {"OutOfSync"}, {"Missing"}, "Running", {}}},  // work Deleting
  };
  const auto manifests = CapturedManifests();
  auto records = cloudevents::testing::ReadCaptured(cloudevents::testing::kCapturedAgentEvents);
  ASSERT_TRUE(records.ok()) << records.status();
  for (const Row& row : rows) {
    ASSERT_LE(row.line, static_cast<int>(records->size()));
    const auto& record = (*records)[row.line - 1];
    auto event = cloudevents::DecodeMqtt(record.message);
    ASSERT_TRUE(event.ok()) << row.line << ": " << event.status();
    auto agent = cloudevents::ManifestBundleStatusOf(*event);
    ASSERT_TRUE(agent.ok()) << row.line << ": " << agent.status();
    auto generation = event->ResourceVersion();
    ASSERT_TRUE(generation.ok()) << row.line;
    auto id = event->GetString(cloudevents::kExtResourceId);
    ASSERT_TRUE(id.ok() && manifests.contains(*id)) << row.line;

    RenderedBundle bundle{.manifests = manifests.at(*id),
                          .revision = "HEAD",
                          .generation = *generation,
                          .dispatched_at = kDispatched};
    const nlohmann::json status = StatusOf(Input(bundle, &*agent, *generation));
    ExpectFacts(status, row.want, "agentevents.jsonl line " + std::to_string(row.line));
    if (row.line == 21) {
      EXPECT_EQ(status["conditions"][0]["message"],
                "Failed sync attempt to HEAD: one or more objects failed to apply, reason: "
                "Application/openshift-gitops/cluster2-guestbook: Failed to apply manifest: "
                "namespaces \"openshift-gitops\" not found");
    }
  }
}

}  // namespace
}  // namespace mmi::status_sink
