#include "tools/fleet-sim/sync_model.h"

#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <string>
#include <vector>

#include "libs/cloudevents/manifest_bundle.h"
#include "libs/common/testing/fake_clock.h"
#include "prometheus/registry.h"
#include "tools/fleet-sim/agent_state.h"
#include "tools/fleet-sim/fleet.h"
#include "tools/fleet-sim/fleet_sim_app.h"

namespace mmi::fleet_sim {
namespace {

using cloudevents::Event;
using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr std::string_view kSource = "mmi-dispatcher";

json App(const std::string& revision, json sync_policy, json operation = nullptr) {
  json app = {
      {"apiVersion", "argoproj.io/v1alpha1"},
      {"kind", "Application"},
      {"metadata", {{"name", "guestbook"}, {"namespace", "openshift-gitops"}}},
      {"spec",
       {{"project", "default"},
        {"destination", {{"namespace", "guestbook"}, {"server", "https://kubernetes.default.svc"}}},
        {"source",
         {{"repoURL", "https://example.com/apps.git"},
          {"path", "guestbook"},
          {"targetRevision", revision}}}}}};
  if (!sync_policy.is_null()) {
    app["spec"]["syncPolicy"] = std::move(sync_policy);
  }
  if (!operation.is_null()) {
    app["operation"] = std::move(operation);
  }
  return app;
}

const json kAutomated = {{"automated", {{"prune", true}, {"selfHeal", true}}},
                         {"syncOptions", {"CreateNamespace=true"}}};
const json kManual = json::object();
// What RollingSync writes on every Application it manages (hub-apis.md §1.7).
const json kRollingSync = {{"automated", {{"enabled", false}, {"prune", true}}}};

json ManualSync(const std::string& user = "admin") {
  return {{"sync", {{"revision", "HEAD"}, {"prune", true}}}, {"initiatedBy", {{"username", user}}}};
}

Event Spec(int version, const json& app) {
  cloudevents::ManifestBundle bundle;
  bundle.manifests.push_back(app);
  cloudevents::ManifestConfigOption config;
  config.resource_identifier = {"argoproj.io", "applications", "guestbook", "openshift-gitops"};
  cloudevents::FeedbackRule rule;
  rule.type = std::string(cloudevents::kFeedbackJsonPaths);
  rule.json_paths.push_back({"status", std::nullopt, ".status"});
  config.feedback_rules.push_back(rule);
  bundle.manifest_configs.push_back(config);
  Event event;
  event.id = "spec-" + std::to_string(version);
  event.source = std::string(kSource);
  event.type = std::string(version == 1 ? cloudevents::kSpecCreateRequestType
                                        : cloudevents::kSpecUpdateRequestType);
  event.data_content_type = std::string(cloudevents::kJsonContentType);
  event.SetString(cloudevents::kExtClusterName, "cluster1");
  event.SetString(cloudevents::kExtResourceId, "res-1");
  event.SetString(cloudevents::kExtResourceVersion, std::to_string(version));
  event.data = *cloudevents::EncodeManifestBundle(bundle);
  return event;
}

// The Application `.status` a status event reports (the JsonRaw "status" feedback).
json AppStatus(const Event& event) {
  auto status = cloudevents::ManifestBundleStatusOf(event);
  EXPECT_TRUE(status.ok()) << status.status();
  if (!status.ok() || status->resource_status.empty() ||
      status->resource_status[0].status_feedback.empty()) {
    return json();
  }
  return json::parse(status->resource_status[0].status_feedback[0].field_value.json_raw);
}

// Fleet-level: one cluster under --sync-model argocd, churn off, driven by a fake clock.
class ArgoCdSyncTest : public ::testing::Test {
 protected:
  ArgoCdSyncTest() : fleet_(Settings(), clock_, metrics_) {}

  static FleetSettings Settings() {
    FleetSettings settings;
    settings.clusters = 1;
    settings.agent.refresh_max = seconds(0);
    settings.agent.sync.model = SyncModel::kArgoCd;
    settings.agent.sync.auto_sync_delay = seconds(2);
    settings.agent.sync.operation_duration = seconds(2);
    settings.agent.sync.progressing_duration = seconds(3);
    return settings;
  }

  // The one status the spec is answered with.
  json Apply(int version, const json& app) {
    auto replies = fleet_.Handle("cluster1", Spec(version, app));
    EXPECT_EQ(replies.size(), 1u);
    return replies.empty() ? json() : Remember(replies[0]);
  }

  // The statuses a tick `after` from now reports.
  std::vector<json> TickAfter(milliseconds after) {
    clock_.Advance(after);
    std::vector<json> statuses;
    for (const Event& event : fleet_.Tick()) {
      statuses.push_back(Remember(event));
    }
    return statuses;
  }

  json Remember(const Event& event) {
    hashes_.insert(*event.StatusHash());
    ++statuses_;
    return AppStatus(event);
  }

  testing::FakeClock clock_{std::chrono::system_clock::time_point(seconds(1'780'000'000))};
  prometheus::Registry registry_;
  FleetMetrics metrics_{registry_};
  Fleet fleet_;
  std::set<std::string> hashes_;
  std::size_t statuses_ = 0;
};

TEST_F(ArgoCdSyncTest, AutomatedApplicationSyncsAfterTheAutoSyncDelay) {
  const json app = App("v1", kAutomated);
  const json created = Apply(1, app);
  EXPECT_EQ(created["sync"]["status"], "OutOfSync");
  EXPECT_EQ(created["sync"]["revision"], SimulatedRevision(app));
  EXPECT_EQ(created["sync"]["comparedTo"]["source"]["targetRevision"], "v1");
  EXPECT_EQ(created["health"]["status"], "Missing");
  EXPECT_EQ(created["resources"][1]["health"]["status"], "Missing");
  EXPECT_FALSE(created.contains("operationState"));
  EXPECT_FALSE(created["summary"].contains("images")) << "nothing deployed yet";

  EXPECT_TRUE(TickAfter(milliseconds(1'999)).empty());
  const std::vector<json> running = TickAfter(milliseconds(1));
  ASSERT_EQ(running.size(), 1u);
  const json& op_state = running[0]["operationState"];
  EXPECT_EQ(op_state["phase"], "Running");
  EXPECT_EQ(op_state["message"], "one or more tasks are running");
  EXPECT_EQ(op_state["startedAt"], "2026-05-28T20:26:42Z");
  EXPECT_EQ(
      op_state["operation"],
      json::parse(R"({"initiatedBy": {"automated": true}, "retry": {"limit": 5},
                            "sync": {"prune": true, "revision": ")" +
                  SimulatedRevision(app) + R"(", "syncOptions": ["CreateNamespace=true"]}})"));
  EXPECT_FALSE(op_state.contains("finishedAt"));
  EXPECT_EQ(running[0]["sync"]["status"], "OutOfSync");

  EXPECT_TRUE(TickAfter(milliseconds(1'999)).empty());
  const std::vector<json> succeeded = TickAfter(milliseconds(1));
  ASSERT_EQ(succeeded.size(), 1u);
  EXPECT_EQ(succeeded[0]["operationState"]["phase"], "Succeeded");
  EXPECT_EQ(succeeded[0]["operationState"]["message"], "successfully synced (all tasks run)");
  EXPECT_EQ(succeeded[0]["operationState"]["finishedAt"], "2026-05-28T20:26:44Z");
  EXPECT_EQ(succeeded[0]["operationState"]["syncResult"]["revision"], SimulatedRevision(app));
  EXPECT_EQ(succeeded[0]["sync"]["status"], "Synced");
  EXPECT_EQ(succeeded[0]["health"]["status"], "Progressing");
  ASSERT_EQ(succeeded[0]["history"].size(), 1u);
  EXPECT_EQ(succeeded[0]["history"][0]["initiatedBy"]["automated"], true);
  EXPECT_EQ(succeeded[0]["history"][0]["deployedAt"], "2026-05-28T20:26:44Z");

  const std::vector<json> healthy = TickAfter(seconds(3));
  ASSERT_EQ(healthy.size(), 1u);
  EXPECT_EQ(healthy[0]["health"]["status"], "Healthy");
  EXPECT_EQ(healthy[0]["sync"]["status"], "Synced");
  EXPECT_TRUE(TickAfter(seconds(60)).empty());
  EXPECT_EQ(hashes_.size(), statuses_) << "every transition is a new statushash";
  EXPECT_EQ(metrics_.StatusesSent("sync").Value(), 3);
}

TEST_F(ArgoCdSyncTest, ManualApplicationStaysOutOfSyncUntilAnOperationArrives) {
  EXPECT_EQ(Apply(1, App("v1", kManual))["sync"]["status"], "OutOfSync");
  EXPECT_TRUE(TickAfter(seconds(600)).empty());

  const json operation = ManualSync();
  const json running = Apply(2, App("v1", kManual, operation));
  EXPECT_EQ(running["operationState"]["phase"], "Running");
  EXPECT_EQ(running["operationState"]["operation"], operation);
  EXPECT_EQ(running["operationState"]["startedAt"], "2026-05-28T20:36:40Z");
  EXPECT_EQ(running["sync"]["status"], "OutOfSync");
  EXPECT_EQ(running["health"]["status"], "Missing");

  const std::vector<json> succeeded = TickAfter(seconds(2));
  ASSERT_EQ(succeeded.size(), 1u);
  EXPECT_EQ(succeeded[0]["operationState"]["phase"], "Succeeded");
  EXPECT_EQ(succeeded[0]["operationState"]["syncResult"]["revision"],
            succeeded[0]["sync"]["revision"]);
  EXPECT_EQ(succeeded[0]["sync"]["status"], "Synced");
  EXPECT_EQ(succeeded[0]["health"]["status"], "Progressing");
  EXPECT_EQ(succeeded[0]["history"][0]["initiatedBy"]["username"], "admin");
  const std::vector<json> healthy = TickAfter(seconds(3));
  ASSERT_EQ(healthy.size(), 1u);
  EXPECT_EQ(healthy[0]["health"]["status"], "Healthy");
  EXPECT_EQ(hashes_.size(), statuses_);
}

TEST_F(ArgoCdSyncTest, AutomatedEnabledFalseCountsAsOff) {
  // Synced once by an operation, then RollingSync's next revision arrives.
  Apply(1, App("v1", kRollingSync, ManualSync()));
  TickAfter(seconds(2));
  TickAfter(seconds(3));
  const json next = App("v2", kRollingSync);
  const json out_of_sync = Apply(2, next);
  EXPECT_EQ(out_of_sync["sync"]["status"], "OutOfSync");
  EXPECT_EQ(out_of_sync["sync"]["revision"], SimulatedRevision(next));
  EXPECT_EQ(out_of_sync["sync"]["comparedTo"]["source"]["targetRevision"], "v2");
  EXPECT_EQ(out_of_sync["health"]["status"], "Healthy") << "health stays what it was";
  EXPECT_EQ(
      out_of_sync["summary"]["images"][0],
      "quay.io/fleet-sim/guestbook:" + SimulatedRevision(App("v1", kRollingSync)).substr(0, 7))
      << "v1 still runs";
  EXPECT_EQ(out_of_sync["operationState"]["phase"], "Succeeded") << "the last operation's";
  EXPECT_TRUE(TickAfter(seconds(600)).empty());

  // The step's operation (RollingSync's own initiator) syncs v2.
  const json step = {{"sync", {{"prune", true}}},
                     {"initiatedBy", {{"username", "applicationset-controller"}}}};
  EXPECT_EQ(Apply(3, App("v2", kRollingSync, step))["operationState"]["phase"], "Running");
  const std::vector<json> succeeded = TickAfter(seconds(2));
  ASSERT_EQ(succeeded.size(), 1u);
  EXPECT_EQ(succeeded[0]["sync"]["status"], "Synced");
  EXPECT_EQ(succeeded[0]["operationState"]["syncResult"]["source"]["targetRevision"], "v2");
  ASSERT_EQ(succeeded[0]["history"].size(), 2u);
  EXPECT_EQ(succeeded[0]["history"][1]["id"], 1);
  EXPECT_EQ(TickAfter(seconds(3)).at(0)["health"]["status"], "Healthy");
}

TEST_F(ArgoCdSyncTest, ARepeatedOperationIsNotRunAgain) {
  const json app = App("v1", kManual, ManualSync());
  const json first = Apply(1, app);
  EXPECT_EQ(first["operationState"]["phase"], "Running");
  clock_.Advance(seconds(1));
  // A re-delivery while it runs: still the same run.
  const json again = Apply(1, app);
  EXPECT_EQ(again["operationState"]["phase"], "Running");
  EXPECT_EQ(again["operationState"]["startedAt"], first["operationState"]["startedAt"]);
  ASSERT_EQ(TickAfter(seconds(1)).size(), 1u);  // Succeeded, 2 s after the start
  TickAfter(seconds(3));

  // A later version still carrying the same operation (the hub has not removed it yet) and a
  // resync resend: the operation is not run again.
  const json resent = Apply(2, app);
  EXPECT_EQ(resent["operationState"]["phase"], "Succeeded");
  EXPECT_EQ(resent["operationState"]["startedAt"], first["operationState"]["startedAt"]);
  EXPECT_EQ(resent["history"].size(), 1u);
  EXPECT_EQ(resent["health"]["status"], "Healthy");
  EXPECT_TRUE(TickAfter(seconds(60)).empty());

  // A different operation is a new request.
  EXPECT_EQ(Apply(3, App("v1", kManual, ManualSync("someone-else")))["operationState"]["phase"],
            "Running");
  EXPECT_EQ(TickAfter(seconds(2)).at(0)["history"].size(), 2u);
}

TEST_F(ArgoCdSyncTest, AnOperationStrippedAndWrittenAgainWhileItRunsDoesNotRestartIt) {
  // Argo CD v3.2's RollingSync writes the step's operation while the Application is OutOfSync;
  // the dispatcher strips it from the hub once dispatched, and the controller, still seeing
  // OutOfSync during the sync, writes it again. The running sync goes on and finishes.
  const json step = {{"sync", {{"prune", true}}},
                     {"initiatedBy", {{"username", "applicationset-controller"}}}};
  const json first = Apply(1, App("v1", kRollingSync, step));
  EXPECT_EQ(first["operationState"]["phase"], "Running");
  clock_.Advance(milliseconds(500));
  Apply(2, App("v1", kRollingSync));  // stripped
  clock_.Advance(milliseconds(500));
  const json again = Apply(3, App("v1", kRollingSync, step));  // written again
  EXPECT_EQ(again["operationState"]["phase"], "Running");
  EXPECT_EQ(again["operationState"]["startedAt"], first["operationState"]["startedAt"]);
  const std::vector<json> succeeded = TickAfter(seconds(1));  // 2 s after the start
  ASSERT_EQ(succeeded.size(), 1u);
  EXPECT_EQ(succeeded[0]["operationState"]["phase"], "Succeeded");
  EXPECT_EQ(succeeded[0]["sync"]["status"], "Synced");
  EXPECT_EQ(succeeded[0]["history"].size(), 1u);
}

TEST_F(ArgoCdSyncTest, DisablingAutomatedSyncBeforeTheDelayCancelsIt) {
  Apply(1, App("v1", kAutomated));
  clock_.Advance(seconds(1));
  Apply(2, App("v1", kRollingSync));
  EXPECT_TRUE(TickAfter(seconds(5)).empty());
}

TEST_F(ArgoCdSyncTest, DeletingAnApplicationDropsItsPendingSteps) {
  Apply(1, App("v1", kAutomated));
  Event remove;
  remove.id = "delete";
  remove.source = std::string(kSource);
  remove.type = std::string(cloudevents::kSpecDeleteRequestType);
  remove.SetString(cloudevents::kExtClusterName, "cluster1");
  remove.SetString(cloudevents::kExtResourceId, "res-1");
  remove.SetString(cloudevents::kExtResourceVersion, "1");
  ASSERT_EQ(fleet_.Handle("cluster1", remove).size(), 1u);
  EXPECT_TRUE(TickAfter(seconds(10)).empty());
}

// Under the default model the policy is ignored: every spec is Synced/Healthy at once.
TEST(InstantSyncModelTest, ReportsEverySpecSyncedAndHealthyAtOnce) {
  testing::FakeClock clock;
  prometheus::Registry registry;
  FleetMetrics metrics(registry);
  FleetSettings settings;
  settings.agent.refresh_max = seconds(0);
  Fleet fleet(settings, clock, metrics);
  auto replies = fleet.Handle("cluster1", Spec(1, App("v1", kRollingSync)));
  ASSERT_EQ(replies.size(), 1u);
  const json status = AppStatus(replies[0]);
  EXPECT_EQ(status["sync"]["status"], "Synced");
  EXPECT_EQ(status["health"]["status"], "Healthy");
  clock.Advance(seconds(60));
  EXPECT_TRUE(fleet.Tick().empty());
}

absl::StatusOr<AppSettings> ParseArgs(std::vector<std::string> args) {
  std::vector<char*> argv;
  for (std::string& arg : args) {
    argv.push_back(arg.data());
  }
  return ParseFlags(static_cast<int>(argv.size()), argv.data());
}

TEST(SyncModelFlagsTest, DefaultToInstantAndReachTheAgentSettings) {
  auto settings = ParseArgs({"fleet-sim", "--broker", "127.0.0.1:1883"});
  ASSERT_TRUE(settings.ok()) << settings.status();
  const SyncModelSettings& instant = settings->simulator.fleet.agent.sync;
  EXPECT_EQ(instant.model, SyncModel::kInstant);
  EXPECT_EQ(instant.auto_sync_delay, seconds(2));
  EXPECT_EQ(instant.operation_duration, seconds(2));
  EXPECT_EQ(instant.progressing_duration, seconds(3));

  settings = ParseArgs({"fleet-sim", "--broker", "127.0.0.1:1883", "--sync-model", "argocd",
                        "--auto-sync-delay", "1", "--operation-duration", "0.5",
                        "--progressing-duration", "0"});
  ASSERT_TRUE(settings.ok()) << settings.status();
  const SyncModelSettings& sync = settings->simulator.fleet.agent.sync;
  EXPECT_EQ(sync.model, SyncModel::kArgoCd);
  EXPECT_EQ(sync.auto_sync_delay, seconds(1));
  EXPECT_EQ(sync.operation_duration, milliseconds(500));
  EXPECT_EQ(sync.progressing_duration, milliseconds(0));

  EXPECT_EQ(ParseArgs({"fleet-sim", "--broker", "b", "--sync-model", "flux"}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseArgs({"fleet-sim", "--broker", "b", "--operation-duration", "-1"}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// The pure core, step by step.
class ArgoCdSyncModelTest : public ::testing::Test {
 protected:
  static SyncModelSettings Settings() {
    SyncModelSettings settings;
    settings.model = SyncModel::kArgoCd;
    return settings;
  }
  cloudevents::Timestamp At(int second) const {
    return cloudevents::Timestamp(seconds(1'780'000'000 + second));
  }

  ArgoCdSyncModel model_{Settings()};
  ApplicationRuntime runtime_;
};

TEST(SyncPolicyTest, AutomatedIsOnWhenPresentUnlessEnabledIsFalse) {
  EXPECT_FALSE(SyncPolicyOf(App("v1", nullptr)).automated);
  EXPECT_FALSE(SyncPolicyOf(App("v1", kManual)).automated);
  EXPECT_FALSE(SyncPolicyOf(App("v1", kRollingSync)).automated);
  EXPECT_TRUE(SyncPolicyOf(App("v1", kRollingSync)).prune);
  EXPECT_TRUE(SyncPolicyOf(App("v1", {{"automated", json::object()}})).automated);
  EXPECT_TRUE(SyncPolicyOf(App("v1", {{"automated", {{"enabled", true}}}})).automated);
  const SyncPolicy policy = SyncPolicyOf(App("v1", kAutomated));
  EXPECT_TRUE(policy.automated);
  EXPECT_TRUE(policy.prune);
  EXPECT_TRUE(policy.self_heal);
  EXPECT_EQ(policy.sync_options, json({"CreateNamespace=true"}));
}

TEST(SyncModelNameTest, ParsesTheFlagValues) {
  EXPECT_EQ(ParseSyncModel("instant"), SyncModel::kInstant);
  EXPECT_EQ(ParseSyncModel("argocd"), SyncModel::kArgoCd);
  EXPECT_EQ(ParseSyncModel("flux"), std::nullopt);
  EXPECT_EQ(SyncModelName(SyncModel::kArgoCd), "argocd");
}

TEST_F(ArgoCdSyncModelTest, ChangingOnlyTheSyncPolicyDoesNotGoOutOfSync) {
  model_.OnSpec(App("v1", kManual, ManualSync()), runtime_, At(0));
  model_.OnTimer(App("v1", kManual), runtime_, At(2));
  model_.OnTimer(App("v1", kManual), runtime_, At(5));
  ASSERT_EQ(runtime_.sync_status, "Synced");
  const SyncStepResult result = model_.OnSpec(App("v1", kAutomated), runtime_, At(9));
  EXPECT_EQ(runtime_.sync_status, "Synced");
  EXPECT_FALSE(result.next.has_value());
  EXPECT_TRUE(ArgoCdSyncModel::Settled(runtime_));
}

TEST_F(ArgoCdSyncModelTest, SelfHealSyncsDriftBackCountingTheAttempts) {
  const json app = App("v1", kAutomated);
  ASSERT_EQ(model_.OnSpec(app, runtime_, At(0)).next, seconds(2));
  ASSERT_EQ(model_.OnTimer(app, runtime_, At(2)).next, seconds(2));  // Running
  ASSERT_EQ(model_.OnTimer(app, runtime_, At(4)).next, seconds(3));  // Succeeded, Progressing
  ASSERT_FALSE(model_.OnTimer(app, runtime_, At(7)).next.has_value());
  runtime_.sync_status = std::string(kSyncOutOfSync);  // churn: someone edited live state
  const SyncStepResult drift = model_.OnDrift(app, runtime_);
  EXPECT_FALSE(drift.changed);
  ASSERT_EQ(drift.next, seconds(2));
  EXPECT_TRUE(model_.OnTimer(app, runtime_, At(12)).changed);
  EXPECT_EQ(json::parse(runtime_.argocd->operation)["sync"]["autoHealAttemptsCount"], 1);
  model_.OnTimer(app, runtime_, At(14));
  EXPECT_EQ(runtime_.sync_status, "Synced");
  EXPECT_EQ(runtime_.argocd->history.size(), 2u);

  // Without selfHeal drift stays until someone syncs.
  ApplicationRuntime other;
  const json no_heal = App("v1", {{"automated", {{"prune", true}}}});
  model_.OnSpec(no_heal, other, At(0));
  model_.OnTimer(no_heal, other, At(2));
  model_.OnTimer(no_heal, other, At(4));
  other.sync_status = std::string(kSyncOutOfSync);
  EXPECT_FALSE(model_.OnDrift(no_heal, other).next.has_value());
}

TEST_F(ArgoCdSyncModelTest, HistoryIsTrimmedToTheRevisionHistoryLimit) {
  for (int i = 0; i < 4; ++i) {
    json app = App("v" + std::to_string(i), kManual, ManualSync("user" + std::to_string(i)));
    app["spec"]["revisionHistoryLimit"] = 2;
    model_.OnSpec(app, runtime_, At(10 * i));
    model_.OnTimer(app, runtime_, At(10 * i + 2));
  }
  ASSERT_EQ(runtime_.argocd->history.size(), 2u);
  EXPECT_EQ(runtime_.argocd->history[0].id, 2);
  EXPECT_EQ(runtime_.argocd->history[1].id, 3);
}

TEST_F(ArgoCdSyncModelTest, ASpecArrivingWhileItSyncsIsComparedAfterTheSync) {
  const json v1 = App("v1", kAutomated);
  const json v2 = App("v2", kAutomated);
  model_.OnSpec(v1, runtime_, At(0));
  model_.OnTimer(v1, runtime_, At(2));  // Running v1
  EXPECT_FALSE(model_.OnSpec(v2, runtime_, At(3)).next.has_value()) << "the run goes on";
  model_.OnTimer(v2, runtime_, At(4));  // v1 Succeeded, but v2 is the target
  EXPECT_EQ(runtime_.sync_status, "OutOfSync");
  EXPECT_EQ(runtime_.argocd->deployed_revision, SimulatedRevision(v1));
  EXPECT_EQ(model_.OnTimer(v2, runtime_, At(7)).next, seconds(2)) << "Healthy, then auto-sync";
  model_.OnTimer(v2, runtime_, At(9));
  model_.OnTimer(v2, runtime_, At(11));
  EXPECT_EQ(runtime_.sync_status, "Synced");
  EXPECT_EQ(runtime_.argocd->deployed_revision, SimulatedRevision(v2));
}

}  // namespace
}  // namespace mmi::fleet_sim
