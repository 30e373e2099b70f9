// The acceptance criteria as unit tests: the whole sink on fakes (FakeSubscriber,
// FakePublisher, FakeKubeClient, FakeStatusStore, FakeClock), driven on the test thread.
#include "services/status-sink/sink.h"

#include <gtest/gtest.h>

#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "libs/cloudevents/mqtt_codec.h"
#include "libs/cloudevents/object_meta.h"
#include "libs/cloudevents/resync.h"
#include "libs/cloudevents/sequence_id.h"
#include "libs/cloudevents/status_hash.h"
#include "libs/cloudevents/testing/captured.h"
#include "libs/common/log.h"
#include "libs/common/testing/fake_clock.h"
#include "libs/common/testing/inline_executor.h"
#include "libs/common/testing/log_capture.h"
#include "libs/kube/testing/fake_kube_client.h"
#include "libs/kube_object/object.h"
#include "libs/store/testing/fake_status_store.h"
#include "libs/transport/metrics.h"
#include "libs/transport/testing/fake_publisher.h"
#include "libs/transport/testing/fake_subscriber.h"
#include "libs/transport/testing/metric_value.h"
#include "services/status-sink/testing/held_executor.h"

namespace mmi::status_sink {
namespace {

using nlohmann::json;
using transport::testing::MetricValue;

constexpr char kResource[] = "278f3a61-efe5-56de-abba-6aedbfcce272";
constexpr char kCluster[] = "cluster1";
constexpr char kAppName[] = "guestbook-cluster1";
constexpr char kResource2[] = "00000000-0000-5000-8000-000000000002";

json Status(const std::string& health, const std::string& reconciled_at = "2026-06-01T10:00:04Z") {
  return json{{"controllerNamespace", "openshift-gitops"},
              {"health", {{"status", health}}},
              {"reconciledAt", reconciled_at},
              {"sourceType", "Directory"},
              {"sync", {{"revision", "53e28ff2"}, {"status", "Synced"}}}};
}

// A status event as Maestro relays it (maestro-protocol.md §2.7), with the agent's statushash.
cloudevents::Event StatusEvent(int seq, const std::string& data,
                               const std::string& resource = kResource,
                               const std::string& cluster = kCluster) {
  cloudevents::Event event;
  event.id = "status-" + std::to_string(seq);
  event.source = std::string(cluster) + "-work-agent";
  event.type = std::string(cloudevents::kStatusUpdateRequestType);
  event.data_content_type = std::string(cloudevents::kJsonContentType);
  event.time = cloudevents::Timestamp(std::chrono::seconds(1'780'308'000));
  event.SetString(cloudevents::kExtClusterName, cluster);
  event.SetString(cloudevents::kExtOriginalSource, "maestro");
  event.SetString(cloudevents::kExtResourceId, resource);
  event.SetString(cloudevents::kExtResourceVersion, "1");
  auto id = cloudevents::SequenceId::FromParts(int64_t{500'000'000'000} + seq, 1, 0);
  event.SetString(cloudevents::kExtSequenceId, id->ToString());
  auto hash = cloudevents::StatusHashOfData(json::parse(data));
  event.SetString(cloudevents::kExtStatusHash, hash.ok() ? *hash : "");
  event.data = data;
  return event;
}

std::string FeedbackData(const std::string& json_raw) {
  json data = {
      {"conditions", json::array({{{"type", "Applied"},
                                   {"status", "True"},
                                   {"lastTransitionTime", "2026-06-01T10:00:04Z"},
                                   {"reason", "AppliedManifestWorkComplete"},
                                   {"message", ""}}})},
      {"resourceStatus",
       json::array(
           {{{"resourceMeta",
              {{"ordinal", 0},
               {"group", "argoproj.io"},
               {"version", "v1alpha1"},
               {"kind", "Application"},
               {"resource", "applications"},
               {"name", kAppName},
               {"namespace", "openshift-gitops"}}},
             {"statusFeedback",
              {{"values",
                json::array({{{"name", "status"},
                              {"fieldValue", {{"type", "JsonRaw"}, {"jsonRaw", json_raw}}}}})}}},
             {"conditions", json::array()}}})}};
  return data.dump();
}

using mmi::testing::LogCapture;

cloudevents::Event StatusEventOf(int seq, const json& status) {
  return StatusEvent(seq, FeedbackData(status.dump()));
}

// A status event whose Application also reports the dispatch version it applied (the
// dispatcher's `dispatchVersion` feedback value).
cloudevents::Event AckingStatusEvent(int seq, const json& status, const std::string& version) {
  json data = json::parse(FeedbackData(status.dump()));
  data["resourceStatus"][0]["statusFeedback"]["values"].push_back(
      {{"name", "dispatchVersion"}, {"fieldValue", {{"type", "String"}, {"string", version}}}});
  return StatusEvent(seq, data.dump());
}

class SinkTest : public ::testing::Test {
 protected:
  SinkTest() {
    store::HubAppRef ref;
    ref.resource_id = kResource;
    ref.cluster = kCluster;
    ref.hub_namespace = "argocd";
    ref.hub_name = kAppName;
    ref.appset_namespace = "argocd";
    ref.appset_name = "guestbook";
    store_.AddResourceForTest(ref);
    json app = {{"apiVersion", "argoproj.io/v1alpha1"},
                {"kind", "Application"},
                {"metadata", {{"name", kAppName}, {"namespace", "argocd"}}},
                {"spec",
                 {{"project", "default"},
                  {"destination", {{"server", "https://cluster1"}, {"namespace", "guestbook"}}}}}};
    EXPECT_TRUE(kube_.Create(ApplicationsRef("argocd"), app, {}).ok());
    EXPECT_TRUE(publisher_.Start().ok());
    settings_.source_id = "mmi-status-sink";
    // The Progressing mechanics for every Application; RollingSync selection has its own tests.
    settings_.progressing_before_healthy = ProgressingMode::kAlways;
    settings_.persist_interval = std::chrono::milliseconds(0);
  }

  ~SinkTest() override {
    if (sink_) {
      sink_->Stop(std::chrono::milliseconds(0));
    }
  }

  void StartSink() {
    sink_ = std::make_unique<Sink>(settings_, subscriber_, publisher_, store_, writer_, executor_,
                                   clock_, metrics_, rolling_sync_);
    ASSERT_TRUE(sink_->Resume().ok());
    ASSERT_TRUE(sink_->StartWithoutThreadForTest().ok());
    sink_->RunUntilIdleForTest();
  }

  void Deliver(cloudevents::Event event) {
    auto id = subscriber_.Deliver(std::move(event));
    ASSERT_TRUE(id.ok()) << id.status();
    sink_->RunUntilIdleForTest();
    EXPECT_TRUE(subscriber_.acked(*id)) << "every handled event is acknowledged";
  }

  size_t Patches() const { return kube_.CountCalls("PATCH"); }
  // health.status of each PATCH body so far, in order (all must be merge patches).
  std::vector<std::string> PatchedHealth() const {
    std::vector<std::string> out;
    for (const auto& call : kube_.Calls()) {
      if (call.verb != "PATCH") {
        continue;
      }
      EXPECT_EQ(call.detail, "merge");
      out.push_back(call.body["status"]["health"].value("status", ""));
    }
    return out;
  }
  json HubStatus() {
    auto app = kube_.Get(ApplicationsRef("argocd"), kAppName);
    EXPECT_TRUE(app.ok()) << app.status();
    return app.ok() ? app->value("status", json()) : json();
  }
  double Dropped(const std::string& reason) {
    return MetricValue(registry_, "mmi_status_events_dropped_total", {{"reason", reason}});
  }

  // A pending set of one, held by kResource's failing write: the report of kResource2
  // (cluster2) overflows and is remembered as lost. Starts the sink. Returns the transport id of
  // kResource's event (acknowledged once its retry is written).
  int64_t LoseReportOfResource2() {
    store::HubAppRef ref2;
    ref2.resource_id = kResource2;
    ref2.cluster = "cluster2";
    ref2.hub_namespace = "argocd";
    ref2.hub_name = "guestbook-cluster2";
    store_.AddResourceForTest(ref2);
    json app2 = {{"apiVersion", "argoproj.io/v1alpha1"},
                 {"kind", "Application"},
                 {"metadata", {{"name", "guestbook-cluster2"}, {"namespace", "argocd"}}},
                 {"spec", {{"project", "default"}}}};
    EXPECT_TRUE(kube_.Create(ApplicationsRef("argocd"), app2, {}).ok());
    settings_.coalescer.max_pending = 1;
    settings_.max_in_flight = 1;
    StartSink();
    // The first resource's write fails and waits for its retry: the pending set is full.
    kube_.FailNext("PATCH", absl::UnavailableError("hub busy"));
    auto waiting = subscriber_.Deliver(StatusEventOf(1, Status("Healthy")));
    EXPECT_TRUE(waiting.ok()) << waiting.status();
    sink_->RunUntilIdleForTest();
    EXPECT_FALSE(subscriber_.acked(*waiting)) << "acknowledged once written and saved";
    Deliver(StatusEvent(2, FeedbackData(Status("Healthy").dump()), kResource2, "cluster2"));
    EXPECT_EQ(Dropped("overflow"), 1);
    EXPECT_EQ(MetricValue(registry_, "mmi_status_queue_depth", {{"queue", "lost"}}), 1);
    return *waiting;
  }
  // The resource ids listed by a published status resync request.
  static std::vector<std::string> Listed(const cloudevents::Event& request) {
    EXPECT_EQ(request.type, cloudevents::kStatusResyncRequestType);
    auto listed = cloudevents::DecodeResourceStatusHashList(request.data.value_or(""));
    EXPECT_TRUE(listed.ok()) << listed.status();
    std::vector<std::string> ids;
    if (listed.ok()) {
      for (const auto& entry : listed->status_hashes) {
        ids.push_back(entry.resource_id);
      }
    }
    return ids;
  }

  const RollingSyncLookup* rolling_sync_ = nullptr;
  testing::FakeClock clock_;
  prometheus::Registry registry_;
  SinkMetrics metrics_{registry_};
  transport::testing::FakeSubscriber subscriber_;
  transport::testing::FakePublisher publisher_;
  store::testing::FakeStatusStore store_;
  kube::testing::FakeKubeClient kube_;
  testing::InlineExecutor executor_;
  Writer writer_{WriterSettings{}, kube_, executor_, clock_, metrics_};
  SinkSettings settings_;
  std::unique_ptr<Sink> sink_;
};

TEST_F(SinkTest, WritesTheSpokeStatusOntoTheHubApplicationAndRemembersIt) {
  StartSink();
  Deliver(StatusEventOf(1, Status("Healthy")));
  ASSERT_EQ(Patches(), 2U) << "Progressing, then Healthy";
  const json status = HubStatus();
  EXPECT_EQ(status["sync"]["status"], "Synced");
  EXPECT_EQ(status["health"]["status"], "Healthy");
  EXPECT_EQ(status["reconciledAt"], "2026-06-01T10:00:04Z");
  EXPECT_EQ(kube_.CountCalls("GET"), 1U) << "only the test's own GET: no GET on the hot path";

  auto applied = store_.AppliedForTest(kResource);
  ASSERT_TRUE(applied.has_value());
  EXPECT_EQ(applied->health_status, "Healthy");
  EXPECT_EQ(applied->appset_name, "guestbook");
  EXPECT_EQ(MetricValue(registry_, "mmi_status_updates_total", {{"result", "ok"}}), 1);
  EXPECT_EQ(metrics_.writes_ok(), 1);
  EXPECT_EQ(MetricValue(registry_, "mmi_status_progressing_writes_total", {{"result", "ok"}}), 1);
}

TEST_F(SinkTest, TheSameStatusResentCausesNoWrite) {
  StartSink();
  Deliver(StatusEventOf(1, Status("Healthy")));
  const size_t after_first = Patches();
  Deliver(StatusEventOf(2, Status("Healthy")));
  EXPECT_EQ(Patches(), after_first);
  EXPECT_EQ(Dropped("duplicate"), 1);
}

TEST_F(SinkTest, AReconciledAtOnlyChangeWithinTheIntervalCausesNoWrite) {
  StartSink();
  Deliver(StatusEventOf(1, Status("Healthy", "2026-06-01T10:00:04Z")));
  const size_t after_first = Patches();
  clock_.Advance(std::chrono::minutes(3));
  Deliver(StatusEventOf(2, Status("Healthy", "2026-06-01T10:03:04Z")));
  EXPECT_EQ(Patches(), after_first);
  EXPECT_EQ(Dropped("unchanged"), 1);
  clock_.Advance(std::chrono::minutes(3));
  Deliver(StatusEventOf(3, Status("Healthy", "2026-06-01T10:06:04Z")));
  EXPECT_EQ(Patches(), after_first + 1)
      << "once the interval passed, the volatile fields are written";
  EXPECT_EQ(HubStatus()["reconciledAt"], "2026-06-01T10:06:04Z");
}

TEST_F(SinkTest, AHealthChangeCausesExactlyOneWrite) {
  StartSink();
  Deliver(StatusEventOf(1, Status("Healthy")));
  const size_t after_first = Patches();
  Deliver(StatusEventOf(2, Status("Degraded", "2026-06-01T10:00:05Z")));
  EXPECT_EQ(Patches(), after_first + 1);
  EXPECT_EQ(HubStatus()["health"]["status"], "Degraded");
  EXPECT_EQ(store_.AppliedForTest(kResource)->health_status, "Degraded");
}

TEST_F(SinkTest, AnOlderSequenceIdIsDropped) {
  StartSink();
  Deliver(StatusEventOf(10, Status("Healthy")));
  const size_t after_first = Patches();
  Deliver(StatusEventOf(5, Status("Degraded")));
  EXPECT_EQ(Patches(), after_first);
  EXPECT_EQ(HubStatus()["health"]["status"], "Healthy");
  EXPECT_EQ(Dropped("stale"), 1);
}

TEST_F(SinkTest, ARestartResumesFromTheStoreWithoutRewriting) {
  StartSink();
  Deliver(StatusEventOf(1, Status("Healthy")));
  const size_t before_restart = Patches();
  sink_->Stop(std::chrono::milliseconds(0));
  sink_.reset();

  // A new process: same store, fresh subscriber (the old one is stopped).
  transport::testing::FakeSubscriber subscriber2;
  Sink restarted(settings_, subscriber2, publisher_, store_, writer_, executor_, clock_, metrics_);
  ASSERT_TRUE(restarted.Resume().ok());
  ASSERT_TRUE(restarted.StartWithoutThreadForTest().ok());
  restarted.RunUntilIdleForTest();

  // The resync request echoes the stored hash, so the agent only resends what changed.
  const auto published = publisher_.published();
  ASSERT_FALSE(published.empty());
  const auto& request = published.back();
  EXPECT_EQ(request.type, cloudevents::kStatusResyncRequestType);
  EXPECT_EQ(request.ClusterName().value(), kCluster);
  auto hashes = cloudevents::DecodeResourceStatusHashList(*request.data);
  ASSERT_TRUE(hashes.ok()) << hashes.status();
  ASSERT_EQ(hashes->status_hashes.size(), 1U);
  EXPECT_EQ(hashes->status_hashes[0].resource_id, kResource);
  EXPECT_EQ(hashes->status_hashes[0].status_hash, store_.AppliedForTest(kResource)->status_hash);

  // The agent answers anyway (e.g. a broadcast resync): nothing is rewritten.
  auto id = subscriber2.Deliver(StatusEventOf(2, Status("Healthy")));
  ASSERT_TRUE(id.ok());
  restarted.RunUntilIdleForTest();
  EXPECT_EQ(Patches(), before_restart);

  // A material change keeps the health Healthy, as the store remembers: one write, no
  // Progressing step.
  json changed = Status("Healthy");
  changed["sync"]["revision"] = "9f1c2b3a";
  id = subscriber2.Deliver(StatusEventOf(3, changed));
  ASSERT_TRUE(id.ok());
  restarted.RunUntilIdleForTest();
  EXPECT_EQ(Patches(), before_restart + 1);
  EXPECT_EQ(PatchedHealth().back(), "Healthy");
  restarted.Stop(std::chrono::milliseconds(0));
}

// End-to-end acknowledgement (docs/reliability.md finding 6): the version the agent applied is
// saved with its status; a republish that changes only it is saved with no hub PATCH; a
// restarted sink does not save it again.
TEST_F(SinkTest, SavesTheAcknowledgedDispatchVersionAndResumesIt) {
  StartSink();
  Deliver(AckingStatusEvent(1, Status("Healthy"), "3"));
  ASSERT_TRUE(store_.AppliedForTest(kResource).has_value());
  EXPECT_EQ(store_.AppliedForTest(kResource)->acked_version, 3);
  const size_t patches = Patches();

  Deliver(AckingStatusEvent(2, Status("Healthy"), "4"));
  EXPECT_EQ(Patches(), patches);
  EXPECT_EQ(store_.AppliedForTest(kResource)->acked_version, 4);
  Deliver(AckingStatusEvent(3, Status("Healthy", "2026-06-01T10:00:09Z"), "2"));
  EXPECT_EQ(store_.AppliedForTest(kResource)->acked_version, 4) << "an older version is ignored";
  sink_->Stop(std::chrono::milliseconds(0));
  sink_.reset();

  transport::testing::FakeSubscriber subscriber2;
  Sink restarted(settings_, subscriber2, publisher_, store_, writer_, executor_, clock_, metrics_);
  ASSERT_TRUE(restarted.Resume().ok());
  ASSERT_TRUE(restarted.StartWithoutThreadForTest().ok());
  restarted.RunUntilIdleForTest();
  const int saves = store_.save_calls();
  // The agent's answer to the resync, a refresh carrying the same version: nothing to save.
  auto id =
      subscriber2.Deliver(AckingStatusEvent(4, Status("Healthy", "2026-06-01T10:00:12Z"), "4"));
  ASSERT_TRUE(id.ok());
  restarted.RunUntilIdleForTest();
  EXPECT_TRUE(subscriber2.acked(*id));
  EXPECT_EQ(store_.save_calls(), saves);
  EXPECT_EQ(Patches(), patches);
  restarted.Stop(std::chrono::milliseconds(0));
}

TEST_F(SinkTest, AnUnknownResourceIdIsCountedAndLoggedNotACrash) {
  StartSink();
  Deliver(StatusEvent(1, FeedbackData(Status("Healthy").dump()),
                      "00000000-0000-5000-8000-000000000099"));
  Deliver(StatusEvent(2, FeedbackData(Status("Healthy").dump()), "not-a-uuid"));
  EXPECT_EQ(Patches(), 0U);
  EXPECT_EQ(Dropped("unknown_resource"), 2);
}

TEST_F(SinkTest, AFloodOfBadEventsIsCountedEachButLoggedAsSummaries) {
  StartSink();
  LogCapture log_lines;
  for (int i = 0; i < 2000; ++i) {
    Deliver(StatusEvent(i + 1, FeedbackData(Status("Healthy").dump()),
                        absl::StrCat("00000000-0000-5000-8000-", 100000000000 + i)));
    Deliver(StatusEvent(i + 1, FeedbackData("{not json")));
    clock_.Advance(std::chrono::milliseconds(5));  // 4,000 bad events in 10 s
  }
  clock_.Advance(std::chrono::seconds(30));
  sink_->RunUntilIdleForTest();  // the loop's tick sums up what was not logged yet
  EXPECT_EQ(Dropped("unknown_resource"), 2000);
  EXPECT_EQ(Dropped("malformed"), 2000);
  const std::string text = log_lines.text();
  const auto count = [&text](std::string_view needle) {
    int n = 0;
    for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
      ++n;
    }
    return n;
  };
  EXPECT_EQ(count("status events for resources the dispatcher does not know"), 2) << text;
  EXPECT_EQ(count("dropping malformed status events"), 2) << text;
  EXPECT_NE(text.find("\"occurrences\":1999"), std::string::npos) << text;
  EXPECT_NE(text.find("\"sample\":\"status-2000\""), std::string::npos) << "the last event's id";
  EXPECT_LE(count("\n"), 10) << "one line per bad event would be 4,000";
}

TEST_F(SinkTest, MalformedFeedbackJsonIsCounted) {
  StartSink();
  Deliver(StatusEvent(1, FeedbackData("{not json")));
  cloudevents::Event no_data = StatusEventOf(2, Status("Healthy"));
  no_data.data = "[]";
  Deliver(std::move(no_data));
  EXPECT_EQ(Patches(), 0U);
  EXPECT_EQ(Dropped("malformed"), 2);
}

TEST_F(SinkTest, AStatusFromAnotherClusterIsRefused) {
  StartSink();
  Deliver(StatusEvent(1, FeedbackData(Status("Healthy").dump()), kResource, "cluster2"));
  EXPECT_EQ(Patches(), 0U);
  EXPECT_EQ(Dropped("cluster_mismatch"), 1);
}

TEST_F(SinkTest, AMissingHubApplicationIsCountedAndDropped) {
  StartSink();
  ASSERT_TRUE(kube_.Delete(ApplicationsRef("argocd"), kAppName, {}).ok());
  Deliver(StatusEventOf(1, Status("Degraded")));
  EXPECT_EQ(MetricValue(registry_, "mmi_status_updates_total", {{"result", "not_found"}}), 1);
  EXPECT_EQ(sink_->pending_for_test(), 0U);
  // A Healthy status: its Progressing write finds no Application, so no second write is tried.
  Deliver(StatusEventOf(2, Status("Healthy")));
  EXPECT_EQ(Patches(), 2U);
  EXPECT_EQ(
      MetricValue(registry_, "mmi_status_progressing_writes_total", {{"result", "not_found"}}), 1);
  EXPECT_EQ(sink_->pending_for_test(), 0U);
  EXPECT_FALSE(store_.AppliedForTest(kResource).has_value());
}

TEST_F(SinkTest, AThrottledWriteIsRetriedWithBackoff) {
  StartSink();
  kube_.FailNext("PATCH", absl::ResourceExhaustedError("HTTP 429 TooManyRequests"));
  auto id = subscriber_.Deliver(StatusEventOf(1, Status("Degraded")));
  ASSERT_TRUE(id.ok());
  sink_->RunUntilIdleForTest();
  EXPECT_FALSE(subscriber_.acked(*id));
  EXPECT_EQ(Patches(), 1U);
  EXPECT_EQ(MetricValue(registry_, "mmi_status_updates_total", {{"result", "retry"}}), 1);
  EXPECT_EQ(sink_->pending_for_test(), 1U);
  clock_.Advance(settings_.retry_backoff.initial);
  sink_->RunUntilIdleForTest();
  EXPECT_EQ(Patches(), 2U);
  EXPECT_EQ(HubStatus()["health"]["status"], "Degraded");
  EXPECT_EQ(sink_->pending_for_test(), 0U);
  EXPECT_TRUE(subscriber_.acked(*id));
}

TEST_F(SinkTest, AnUnavailableStoreDelaysTheAckButLosesNothing) {
  StartSink();
  store_.FailWithForTest(absl::UnavailableError("db down"));
  auto id = subscriber_.Deliver(StatusEventOf(1, Status("Healthy")));
  ASSERT_TRUE(id.ok());
  sink_->RunUntilIdleForTest();
  EXPECT_FALSE(subscriber_.acked(*id)) << "not acknowledged before it is durable";
  store_.FailWithForTest(absl::OkStatus());
  clock_.Advance(std::chrono::seconds(1));
  sink_->RunUntilIdleForTest();
  EXPECT_TRUE(subscriber_.acked(*id));
  EXPECT_EQ(PatchedHealth(), (std::vector<std::string>{"Progressing", "Healthy"}));
  EXPECT_TRUE(store_.AppliedForTest(kResource).has_value());
}

TEST_F(SinkTest, ADeletionCompleteStatusIsHandedToTheDispatcher) {
  // The dispatcher asked for the deletion: the row says so.
  store::HubAppRef ref = *store_.LookupHubApps({kResource})->begin();
  ref.deletion_state = store::DeletionState::kDeleteRequested;
  store_.AddResourceForTest(ref);
  StartSink();
  json data = {
      {"conditions",
       json::array({{{"type", "Deleted"},
                     {"status", "True"},
                     {"lastTransitionTime", "2026-06-01T10:00:04Z"},
                     {"reason", "ManifestsDeleted"},
                     {"message", "The manifests are deleted from the cluster cluster1"}}})}};
  Deliver(StatusEvent(1, data.dump()));
  EXPECT_EQ(Patches(), 0U);
  EXPECT_EQ(store_.DeletionStateForTest(kResource), store::DeletionState::kDeleteConfirmed);
  EXPECT_EQ(store_.notifications(), std::vector<std::string>{kResource});
  EXPECT_EQ(MetricValue(registry_, "mmi_status_deletions_confirmed_total", {}), 1);
}

// What a watch cache of ApplicationSets answers, scripted.
class ScriptedRollingSync final : public RollingSyncLookup {
 public:
  explicit ScriptedRollingSync(std::optional<bool> answer) : answer_(answer) {}
  std::optional<bool> UsesRollingSync(std::string_view ns, std::string_view name) const override {
    asked_ = std::string(ns) + "/" + std::string(name);
    return answer_;
  }
  std::string asked() const { return asked_; }

 private:
  std::optional<bool> answer_;
  mutable std::string asked_;
};

TEST_F(SinkTest, RollingSyncModeWritesProgressingFirstOnlyForARollingSyncApplicationSet) {
  settings_.progressing_before_healthy = ProgressingMode::kRollingSync;
  ScriptedRollingSync other_strategy(false);
  rolling_sync_ = &other_strategy;
  StartSink();
  Deliver(StatusEventOf(1, Status("Healthy")));
  EXPECT_EQ(other_strategy.asked(), "argocd/guestbook");
  EXPECT_EQ(PatchedHealth(), std::vector<std::string>{"Healthy"}) << "one write, no Progressing";
}

TEST_F(SinkTest, RollingSyncModeWritesProgressingFirstForARollingSyncApplicationSet) {
  settings_.progressing_before_healthy = ProgressingMode::kRollingSync;
  ScriptedRollingSync rolling(true);
  rolling_sync_ = &rolling;
  StartSink();
  Deliver(StatusEventOf(1, Status("Healthy")));
  EXPECT_EQ(PatchedHealth(), (std::vector<std::string>{"Progressing", "Healthy"}));
}

TEST_F(SinkTest, RollingSyncModeWritesProgressingFirstWhileTheStrategyIsUnknown) {
  settings_.progressing_before_healthy = ProgressingMode::kRollingSync;
  ScriptedRollingSync not_synced(std::nullopt);  // one write too many beats a stuck rollout
  rolling_sync_ = &not_synced;
  StartSink();
  Deliver(StatusEventOf(1, Status("Healthy")));
  EXPECT_EQ(PatchedHealth(), (std::vector<std::string>{"Progressing", "Healthy"}));
}

TEST_F(SinkTest, ADeletedReportForALiveResourceIsCountedAndTheResourceStaysLive) {
  // Live: never asked to delete, or re-created since; the report is late or redelivered.
  StartSink();
  Deliver(StatusEventOf(1, Status("Healthy")));
  const std::size_t patches = Patches();
  json data = {{"conditions", json::array({{{"type", "Deleted"},
                                            {"status", "True"},
                                            {"lastTransitionTime", "2026-06-01T10:00:04Z"},
                                            {"reason", "ManifestsDeleted"},
                                            {"message", "The manifests are deleted"}}})}};
  auto id = subscriber_.Deliver(StatusEvent(2, data.dump()));
  ASSERT_TRUE(id.ok());
  sink_->RunUntilIdleForTest();
  EXPECT_TRUE(subscriber_.acked(*id));
  EXPECT_EQ(store_.DeletionStateForTest(kResource), store::DeletionState::kLive);
  EXPECT_TRUE(store_.notifications().empty());
  EXPECT_EQ(MetricValue(registry_, "mmi_status_deletions_confirmed_total", {}), 0);
  EXPECT_EQ(Dropped("deleted_while_live"), 1);
  // The resource keeps its state: its next real change is written as before.
  Deliver(StatusEventOf(3, Status("Degraded")));
  EXPECT_EQ(Patches(), patches + 1);
  EXPECT_TRUE(store_.AppliedForTest(kResource).has_value());
}

TEST_F(SinkTest, RequestsAStatusResyncWhenSubscribedAndAfterAReconnect) {
  StartSink();
  ASSERT_EQ(publisher_.published().size(), 1U);
  EXPECT_EQ(publisher_.published()[0].type, cloudevents::kStatusResyncRequestType);
  EXPECT_EQ(publisher_.published()[0].source, "mmi-status-sink");
  clock_.Advance(settings_.status_resync_min_interval);
  subscriber_.SimulateDisconnect();
  subscriber_.SimulateReconnect();
  sink_->RunUntilIdleForTest();
  EXPECT_EQ(publisher_.published().size(), 2U);
  EXPECT_EQ(MetricValue(registry_, "mmi_status_resync_suppressed_total", {}), 0);
}

TEST_F(SinkTest, AFullIntakeDropsAndLaterAsksForAResync) {
  settings_.intake_capacity = 1;
  StartSink();
  const size_t resyncs = publisher_.published().size();
  auto first = subscriber_.Deliver(StatusEventOf(1, Status("Healthy")));
  auto second = subscriber_.Deliver(StatusEventOf(2, Status("Degraded")));
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_TRUE(subscriber_.acked(*second)) << "dropped at once, recovered by a resync";
  EXPECT_EQ(Dropped("queue_full"), 1);
  sink_->RunUntilIdleForTest();
  EXPECT_EQ(PatchedHealth(), (std::vector<std::string>{"Progressing", "Healthy"}));
  EXPECT_EQ(publisher_.published().size(), resyncs) << "within the minimum resync interval";
  EXPECT_EQ(MetricValue(registry_, "mmi_status_resync_suppressed_total", {}), 1);
  clock_.Advance(settings_.status_resync_min_interval);
  sink_->RunUntilIdleForTest();
  EXPECT_EQ(publisher_.published().size(), resyncs + 1);
  EXPECT_EQ(MetricValue(registry_, "mmi_status_queue_depth", {{"queue", "intake"}}), 0);
}

// At fleet scale a cold start offers far more first statuses than status.maxPending holds. What
// overflows is remembered and asked for again by a resync that lists only those resources, and
// only once the pending set has room for the answers - not a resync of everything every 30 s,
// whose answers would overflow again.
TEST_F(SinkTest, AnOverflowIsRecoveredByAResyncListingOnlyTheLostResources) {
  LogCapture log_lines;
  const auto waiting = LoseReportOfResource2();
  const std::size_t resyncs = publisher_.published().size();  // the one on subscribing
  // One summary warning for the drops, not one line per report.
  sink_->RunUntilIdleForTest();
  EXPECT_NE(log_lines.text().find("status reports dropped for want of room"), std::string::npos)
      << log_lines.text();
  EXPECT_NE(log_lines.text().find("\"overflowed\":1"), std::string::npos) << log_lines.text();

  // The retry lands, the room is back; the next resync lists the lost resource alone.
  clock_.Advance(settings_.status_resync_min_interval);
  sink_->RunUntilIdleForTest();
  clock_.Advance(std::chrono::seconds(1));
  sink_->RunUntilIdleForTest();
  EXPECT_TRUE(subscriber_.acked(waiting));
  ASSERT_EQ(publisher_.published().size(), resyncs + 1);
  const cloudevents::Event request = publisher_.published().back();
  EXPECT_EQ(request.type, cloudevents::kStatusResyncRequestType);
  EXPECT_EQ(request.ClusterName().value_or(""), "cluster2");
  auto listed = cloudevents::DecodeResourceStatusHashList(request.data.value_or(""));
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->status_hashes.size(), 1U);
  EXPECT_EQ(listed->status_hashes[0].resource_id, kResource2);
  EXPECT_EQ(listed->status_hashes[0].status_hash, "") << "nothing held: any report answers";
  EXPECT_EQ(MetricValue(registry_, "mmi_status_queue_depth", {{"queue", "lost"}}), 0);

  // The agent's answer is admitted and written like any report.
  const double written = MetricValue(registry_, "mmi_status_updates_total", {{"result", "ok"}});
  Deliver(StatusEvent(3, FeedbackData(Status("Healthy").dump()), kResource2, "cluster2"));
  EXPECT_GT(MetricValue(registry_, "mmi_status_updates_total", {{"result", "ok"}}), written);
  auto hub2 = kube_.Get(ApplicationsRef("argocd"), "guestbook-cluster2");
  ASSERT_TRUE(hub2.ok()) << hub2.status();
  EXPECT_EQ(hub2->value("/status/health/status"_json_pointer, ""), "Healthy");
  EXPECT_EQ(Dropped("overflow"), 1);
  clock_.Advance(settings_.status_resync_min_interval);
  sink_->RunUntilIdleForTest();
  EXPECT_EQ(publisher_.published().size(), resyncs + 1) << "nothing lost any more";
  clock_.Advance(settings_.lost_answer_timeout);
  sink_->RunUntilIdleForTest();
  EXPECT_EQ(publisher_.published().size(), resyncs + 1) << "the answer ended the wait";
  EXPECT_EQ(MetricValue(registry_, "mmi_status_queue_depth", {{"queue", "lost_asked"}}), 0);
  EXPECT_EQ(
      MetricValue(registry_, "mmi_status_lost_unanswered_total", {{"outcome", "asked_again"}}), 0);
}

TEST_F(SinkTest, ALostReportWhoseAskGoesUnansweredIsAskedAgainThenGivenUp) {
  LogCapture log_lines;
  settings_.lost_asks = 2;
  LoseReportOfResource2();
  const std::size_t resyncs = publisher_.published().size();
  const std::vector<std::string> lost = {kResource2};
  const auto next_round = [&] {
    clock_.Advance(settings_.status_resync_min_interval);
    sink_->RunUntilIdleForTest();
    clock_.Advance(std::chrono::seconds(1));
    sink_->RunUntilIdleForTest();
  };

  next_round();
  ASSERT_EQ(publisher_.published().size(), resyncs + 1);
  EXPECT_EQ(Listed(publisher_.published().back()), lost);
  EXPECT_EQ(MetricValue(registry_, "mmi_status_queue_depth", {{"queue", "lost_asked"}}), 1);

  // The request or its answer went astray: asked again once the answer is overdue.
  clock_.Advance(settings_.lost_answer_timeout - std::chrono::seconds(1));
  next_round();
  ASSERT_EQ(publisher_.published().size(), resyncs + 2);
  EXPECT_EQ(Listed(publisher_.published().back()), lost);
  EXPECT_EQ(
      MetricValue(registry_, "mmi_status_lost_unanswered_total", {{"outcome", "asked_again"}}), 1);

  // The last allowed ask goes unanswered too: given up on, counted and logged, not asked again.
  clock_.Advance(settings_.lost_answer_timeout);
  next_round();
  next_round();
  EXPECT_EQ(publisher_.published().size(), resyncs + 2);
  EXPECT_EQ(MetricValue(registry_, "mmi_status_lost_unanswered_total", {{"outcome", "given_up"}}),
            1);
  EXPECT_EQ(MetricValue(registry_, "mmi_status_queue_depth", {{"queue", "lost_asked"}}), 0);
  EXPECT_EQ(MetricValue(registry_, "mmi_status_queue_depth", {{"queue", "lost"}}), 0);
  EXPECT_NE(log_lines.text().find("got no answer; given up"), std::string::npos)
      << log_lines.text();
}

TEST_F(SinkTest, LostReportsAreAskedForWhileThePendingSetIsFullOfVolatileOnlyWrites) {
  // Argo CD's refresh churn keeps the pending set full of volatile-only writes at the hub rate
  // limit; lost first statuses must still be asked for again (room = what an answer may shed).
  const std::vector<std::string> ids = {kResource, "00000000-0000-5000-8000-000000000002",
                                        "00000000-0000-5000-8000-000000000003",
                                        "00000000-0000-5000-8000-000000000004"};
  for (std::size_t i = 1; i < ids.size(); ++i) {
    store::HubAppRef ref;
    ref.resource_id = ids[i];
    ref.cluster = kCluster;
    ref.hub_namespace = "argocd";
    ref.hub_name = "app-" + std::to_string(i);
    store_.AddResourceForTest(ref);
    json app = {{"apiVersion", "argoproj.io/v1alpha1"},
                {"kind", "Application"},
                {"metadata", {{"name", ref.hub_name}, {"namespace", "argocd"}}},
                {"spec", {{"project", "default"}}}};
    ASSERT_TRUE(kube_.Create(ApplicationsRef("argocd"), app, {}).ok());
  }
  settings_.progressing_before_healthy = ProgressingMode::kNever;
  settings_.coalescer.max_pending = 2;
  settings_.coalescer.volatile_interval = std::chrono::minutes(1);
  settings_.status_resync_min_interval = std::chrono::hours(1);
  settings_.max_in_flight = 1;
  HeldExecutor held;
  Writer writer{WriterSettings{}, kube_, held, clock_, metrics_};
  Sink sink(settings_, subscriber_, publisher_, store_, writer, executor_, clock_, metrics_);
  ASSERT_TRUE(sink.Resume().ok());
  ASSERT_TRUE(sink.StartWithoutThreadForTest().ok());
  int seq = 0;
  auto deliver = [&](const std::string& id, const json& status) {
    ASSERT_TRUE(subscriber_.Deliver(StatusEvent(++seq, FeedbackData(status.dump()), id)).ok());
    sink.RunUntilIdleForTest();
  };
  auto write_all = [&] {
    for (int i = 0; i < 10; ++i) {
      held.RunAll();
      sink.RunUntilIdleForTest();
    }
  };
  sink.RunUntilIdleForTest();
  const std::size_t resyncs = publisher_.published().size();  // the one on subscribing

  // The writer is busy (resource 2), the pending set fills with first statuses (material) and
  // resource 3's first status overflows: lost.
  deliver(ids[2], Status("Healthy"));
  deliver(ids[0], Status("Healthy"));
  deliver(ids[1], Status("Healthy"));
  deliver(ids[3], Status("Healthy"));
  EXPECT_EQ(Dropped("overflow"), 1);
  EXPECT_EQ(MetricValue(registry_, "mmi_status_queue_depth", {{"queue", "lost"}}), 1);
  write_all();
  ASSERT_EQ(Patches(), 3U);

  // Before the next resync round the writer is busy again and the pending set is full of
  // refresh churn: volatile-only writes (only reconciledAt changed, the interval passed).
  clock_.Advance(settings_.coalescer.volatile_interval);
  deliver(ids[2], Status("Degraded"));
  deliver(ids[0], Status("Healthy", "2026-06-01T10:05:04Z"));
  deliver(ids[1], Status("Healthy", "2026-06-01T10:05:04Z"));
  EXPECT_EQ(Dropped("overflow"), 1);
  EXPECT_EQ(publisher_.published().size(), resyncs) << "no round before the interval";

  // The first round's request is not published: summed in one warning, asked again later.
  LogCapture log_lines;
  publisher_.FailNext(absl::DeadlineExceededError("no PUBACK"));
  clock_.Advance(settings_.status_resync_min_interval);
  sink.RunUntilIdleForTest();
  EXPECT_EQ(MetricValue(registry_, "mmi_status_queue_depth", {{"queue", "lost"}}), 1);
  EXPECT_NE(log_lines.text().find("\"failed_requests\":1"), std::string::npos) << log_lines.text();
  const std::size_t attempts = publisher_.published().size();

  clock_.Advance(settings_.status_resync_min_interval);
  sink.RunUntilIdleForTest();
  ASSERT_EQ(publisher_.published().size(), attempts + 1) << "the lost report is asked for";
  const cloudevents::Event request = publisher_.published().back();
  EXPECT_EQ(request.type, cloudevents::kStatusResyncRequestType);
  auto listed = cloudevents::DecodeResourceStatusHashList(request.data.value_or(""));
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->status_hashes.size(), 1U);
  EXPECT_EQ(listed->status_hashes[0].resource_id, ids[3]);

  // The answer sheds a volatile-only write and reaches the hub.
  deliver(ids[3], Status("Healthy"));
  EXPECT_EQ(Dropped("volatile_shed"), 1);
  EXPECT_EQ(Dropped("overflow"), 1);
  write_all();
  auto hub3 = kube_.Get(ApplicationsRef("argocd"), "app-3");
  ASSERT_TRUE(hub3.ok()) << hub3.status();
  EXPECT_EQ(hub3->value("/status/health/status"_json_pointer, ""), "Healthy");
  sink.Stop(std::chrono::milliseconds(0));
}

TEST_F(SinkTest, StopDrainsWhatTheLoopThreadHasNotWrittenYet) {
  sink_ = std::make_unique<Sink>(settings_, subscriber_, publisher_, store_, writer_, executor_,
                                 clock_, metrics_);
  ASSERT_TRUE(sink_->Resume().ok());
  ASSERT_TRUE(sink_->Start().ok());  // with its own loop thread
  auto id = subscriber_.Deliver(StatusEventOf(1, Status("Healthy")));
  ASSERT_TRUE(id.ok());
  sink_->Stop(std::chrono::seconds(30));
  EXPECT_EQ(PatchedHealth(), (std::vector<std::string>{"Progressing", "Healthy"}));
  EXPECT_TRUE(subscriber_.acked(*id));
  EXPECT_TRUE(store_.AppliedForTest(kResource).has_value());
}

TEST_F(SinkTest, ExportsTheFleetReportPerAppSet) {
  StartSink();
  Deliver(StatusEventOf(1, Status("Healthy")));
  clock_.Advance(settings_.counts_interval);
  sink_->RunUntilIdleForTest();
  EXPECT_EQ(MetricValue(registry_, "mmi_appset_applications",
                        {{"appset_namespace", "argocd"},
                         {"appset_name", "guestbook"},
                         {"sync", "Synced"},
                         {"health", "Healthy"}}),
            1);
}

// --- Progressing before Healthy (hub-apis.md §1.7, §5.6) -----------------------------------

TEST_F(SinkTest, TheFirstHealthyWriteIsPrecededByProgressing) {
  StartSink();
  Deliver(StatusEventOf(1, Status("Healthy")));
  EXPECT_EQ(PatchedHealth(), (std::vector<std::string>{"Progressing", "Healthy"}));
  const auto calls = kube_.Calls();
  ASSERT_EQ(calls.size(), 3U) << "the test's CREATE and two PATCHes: no GET";
  json progressing = calls[1].body;
  progressing["status"]["health"]["status"] = "Healthy";
  EXPECT_EQ(progressing, calls[2].body) << "the two writes differ in health.status only";
  EXPECT_EQ(HubStatus()["health"]["status"], "Healthy");
  EXPECT_EQ(MetricValue(registry_, "mmi_status_progressing_writes_total", {{"result", "ok"}}), 1);
  EXPECT_EQ(MetricValue(registry_, "mmi_status_updates_total", {{"result", "ok"}}), 1);
}

TEST_F(SinkTest, AHealthyToHealthyChangeIsOneWrite) {
  StartSink();
  Deliver(StatusEventOf(1, Status("Healthy")));
  ASSERT_EQ(Patches(), 2U);
  json changed = Status("Healthy", "2026-06-01T10:00:05Z");
  changed["sync"]["revision"] = "9f1c2b3a";
  Deliver(StatusEventOf(2, changed));
  EXPECT_EQ(PatchedHealth(), (std::vector<std::string>{"Progressing", "Healthy", "Healthy"}));
  EXPECT_EQ(HubStatus()["sync"]["revision"], "9f1c2b3a");
  EXPECT_EQ(MetricValue(registry_, "mmi_status_progressing_writes_total", {{"result", "ok"}}), 1);
}

TEST_F(SinkTest, ADegradedToHealthyChangeIsTwoWrites) {
  StartSink();
  Deliver(StatusEventOf(1, Status("Degraded")));
  EXPECT_EQ(PatchedHealth(), (std::vector<std::string>{"Degraded"}));
  Deliver(StatusEventOf(2, Status("Healthy", "2026-06-01T10:00:05Z")));
  EXPECT_EQ(PatchedHealth(), (std::vector<std::string>{"Degraded", "Progressing", "Healthy"}));
  EXPECT_EQ(HubStatus()["health"]["status"], "Healthy");
  EXPECT_EQ(store_.AppliedForTest(kResource)->health_status, "Healthy");
}

TEST_F(SinkTest, AProgressingToHealthyChangeNeedsNoExtraWrite) {
  StartSink();
  Deliver(StatusEventOf(1, Status("Progressing")));
  Deliver(StatusEventOf(2, Status("Healthy", "2026-06-01T10:00:05Z")));
  EXPECT_EQ(PatchedHealth(), (std::vector<std::string>{"Progressing", "Healthy"}));
  EXPECT_EQ(MetricValue(registry_, "mmi_status_progressing_writes_total", {{"result", "ok"}}), 0);
}

TEST_F(SinkTest, WhenDisabledAHealthyStatusIsOneWrite) {
  settings_.progressing_before_healthy = ProgressingMode::kNever;
  StartSink();
  Deliver(StatusEventOf(1, Status("Healthy")));
  EXPECT_EQ(PatchedHealth(), (std::vector<std::string>{"Healthy"}));
  Deliver(StatusEventOf(2, Status("Degraded", "2026-06-01T10:00:05Z")));
  Deliver(StatusEventOf(3, Status("Healthy", "2026-06-01T10:00:06Z")));
  EXPECT_EQ(PatchedHealth(), (std::vector<std::string>{"Healthy", "Degraded", "Healthy"}));
  EXPECT_EQ(MetricValue(registry_, "mmi_status_progressing_writes_total", {{"result", "ok"}}), 0);
}

TEST_F(SinkTest, AFailedHealthyWriteAfterProgressingRetriesOnlyTheHealthyOne) {
  StartSink();
  kube_.FailNext("PATCH", absl::OkStatus());  // the Progressing write lands
  kube_.FailNext("PATCH", absl::UnavailableError("HTTP 503"));
  auto id = subscriber_.Deliver(StatusEventOf(1, Status("Healthy")));
  ASSERT_TRUE(id.ok());
  sink_->RunUntilIdleForTest();
  EXPECT_FALSE(subscriber_.acked(*id));
  EXPECT_EQ(HubStatus()["health"]["status"], "Progressing");
  EXPECT_EQ(MetricValue(registry_, "mmi_status_updates_total", {{"result", "retry"}}), 1);
  clock_.Advance(settings_.retry_backoff.initial);
  sink_->RunUntilIdleForTest();
  EXPECT_EQ(PatchedHealth(), (std::vector<std::string>{"Progressing", "Healthy", "Healthy"}));
  EXPECT_EQ(HubStatus()["health"]["status"], "Healthy");
  EXPECT_TRUE(subscriber_.acked(*id));
}

TEST_F(SinkTest, AFailedProgressingWriteIsRetriedWithItsHealthyOne) {
  StartSink();
  kube_.FailNext("PATCH", absl::ResourceExhaustedError("HTTP 429 TooManyRequests"));
  auto id = subscriber_.Deliver(StatusEventOf(1, Status("Healthy")));
  ASSERT_TRUE(id.ok());
  sink_->RunUntilIdleForTest();
  EXPECT_EQ(PatchedHealth(), (std::vector<std::string>{"Progressing"}));
  EXPECT_EQ(MetricValue(registry_, "mmi_status_progressing_writes_total", {{"result", "retry"}}),
            1);
  clock_.Advance(settings_.retry_backoff.initial);
  sink_->RunUntilIdleForTest();
  EXPECT_EQ(PatchedHealth(), (std::vector<std::string>{"Progressing", "Progressing", "Healthy"}));
  EXPECT_TRUE(subscriber_.acked(*id));
}

// --- status resync rate limit ----------------------------------------------------------------

TEST_F(SinkTest, AFlappingConnectionGetsOneResyncPerIntervalAndNoAskIsLost) {
  StartSink();
  ASSERT_EQ(publisher_.published().size(), 1U);
  for (int i = 0; i < 5; ++i) {
    subscriber_.SimulateDisconnect();
    subscriber_.SimulateReconnect();
    clock_.Advance(std::chrono::seconds(1));
    sink_->RunUntilIdleForTest();
  }
  EXPECT_EQ(publisher_.published().size(), 1U) << "no storm of resync requests";
  EXPECT_EQ(MetricValue(registry_, "mmi_status_resync_suppressed_total", {}), 5);

  // The asks are served by one resync as soon as the interval since the last one has passed.
  clock_.Advance(settings_.status_resync_min_interval - std::chrono::seconds(5) -
                 std::chrono::milliseconds(1));
  sink_->RunUntilIdleForTest();
  EXPECT_EQ(publisher_.published().size(), 1U);
  clock_.Advance(std::chrono::milliseconds(1));
  sink_->RunUntilIdleForTest();
  ASSERT_EQ(publisher_.published().size(), 2U);
  EXPECT_EQ(publisher_.published()[1].type, cloudevents::kStatusResyncRequestType);

  // Nothing else is pending: no further resync without a new ask.
  clock_.Advance(settings_.status_resync_min_interval * 3);
  sink_->RunUntilIdleForTest();
  EXPECT_EQ(publisher_.published().size(), 2U);
  EXPECT_EQ(MetricValue(registry_, "mmi_status_resync_suppressed_total", {}), 5);

  // An ask after the interval goes out at once.
  subscriber_.SimulateDisconnect();
  subscriber_.SimulateReconnect();
  sink_->RunUntilIdleForTest();
  EXPECT_EQ(publisher_.published().size(), 3U);
}

TEST_F(SinkTest, AZeroMinimumResyncIntervalDoesNotLimit) {
  settings_.status_resync_min_interval = std::chrono::milliseconds(0);
  StartSink();
  for (int i = 0; i < 3; ++i) {
    subscriber_.SimulateDisconnect();
    subscriber_.SimulateReconnect();
    sink_->RunUntilIdleForTest();
  }
  EXPECT_EQ(publisher_.published().size(), 4U);
  EXPECT_EQ(MetricValue(registry_, "mmi_status_resync_suppressed_total", {}), 0);
}

}  // namespace
}  // namespace mmi::status_sink

namespace mmi::status_sink {
namespace {

// Every status the real work agent reported (../shared/spec/samples/captured/agentevents.jsonl:
// relayed by the real Maestro server, or straight over MQTT) lands on its hub Application exactly
// as the agent's `status` feedback carries it.
TEST_F(SinkTest, EveryCapturedAgentStatusLandsOnTheHubAsItsFeedbackCarriesIt) {
  settings_.coalescer.volatile_interval = std::chrono::milliseconds(0);  // write every change
  auto records = cloudevents::testing::ReadCaptured(cloudevents::testing::kCapturedAgentEvents);
  ASSERT_TRUE(records.ok()) << records.status();
  struct Captured {
    int line;
    cloudevents::Event event;
    std::string hub_namespace;
    std::string hub_name;
  };
  std::vector<Captured> statuses;
  std::set<std::string> registered;
  for (const auto& record : *records) {
    auto event = cloudevents::DecodeMqtt(record.message);
    ASSERT_TRUE(event.ok()) << record.line << ": " << event.status();
    if (cloudevents::ClassifyReceived(*event) != cloudevents::ReceivedKind::kStatus) {
      continue;  // the agent's spec resync requests
    }
    auto meta = cloudevents::ObjectMetaOf(*event);
    ASSERT_TRUE(meta.ok()) << record.line << ": " << meta.status();
    Captured c{record.line, *event,
               meta->annotations.at("apps.open-cluster-management.io/hub-application-namespace"),
               meta->annotations.at("apps.open-cluster-management.io/hub-application-name")};
    const std::string id = *event->ResourceId();
    if (registered.insert(id).second) {
      store::HubAppRef ref;
      ref.resource_id = id;
      ref.cluster = *event->ClusterName();
      ref.hub_namespace = c.hub_namespace;
      ref.hub_name = c.hub_name;
      store_.AddResourceForTest(ref);
      json app = {{"apiVersion", "argoproj.io/v1alpha1"},
                  {"kind", "Application"},
                  {"metadata", {{"name", c.hub_name}, {"namespace", c.hub_namespace}}},
                  {"spec", {{"project", "default"}}}};
      ASSERT_TRUE(kube_.Create(ApplicationsRef(c.hub_namespace), app, {}).ok());
    }
    statuses.push_back(std::move(c));
  }
  ASSERT_GE(registered.size(), 2u);
  StartSink();
  int landed = 0;
  for (const Captured& c : statuses) {
    SCOPED_TRACE(::testing::Message() << "agentevents.jsonl:" << c.line);
    Deliver(c.event);
    auto status = cloudevents::ManifestBundleStatusOf(c.event);
    ASSERT_TRUE(status.ok()) << status.status();
    auto feedback = FeedbackStatus(*status);
    ASSERT_TRUE(feedback.ok()) << feedback.status();
    if (cloudevents::IsDeleted(*status) || !feedback->has_value()) {
      continue;  // a deletion report, or no feedback yet
    }
    auto app = kube_.Get(ApplicationsRef(c.hub_namespace), c.hub_name);
    ASSERT_TRUE(app.ok()) << app.status();
    EXPECT_EQ(app->value("status", json()), **feedback);
    ++landed;
  }
  EXPECT_EQ(landed, 18) << "the capture holds 18 status reports that carry the Application status";
  EXPECT_EQ(Dropped("malformed"), 0);
}

// Manifest delivery (issue #38 §5): the dispatcher rendered the bundle and recorded it with its
// manifest_renders row; the agent reports the ManifestBundle's status, and the sink builds the
// hub Application's status from both.

constexpr char kRevision[] = "9f2c4e1";
constexpr int kGeneration = 2;

json RenderedService() {
  return {{"apiVersion", "v1"},
          {"kind", "Service"},
          {"metadata", {{"name", "web"}, {"namespace", "shop"}}},
          {"spec", {{"type", "ClusterIP"}}}};
}

std::string RenderedPayload() {
  cloudevents::ManifestBundle bundle;
  bundle.manifests = {RenderedService()};
  auto encoded = cloudevents::EncodeManifestBundle(bundle);
  EXPECT_TRUE(encoded.ok()) << encoded.status();
  return encoded.value_or("");
}

// kResource in manifest delivery, as the dispatcher records it.
store::HubAppRef ManifestResource(std::optional<std::string> render_error = std::nullopt) {
  store::HubAppRef ref;
  ref.resource_id = kResource;
  ref.cluster = kCluster;
  ref.hub_namespace = "argocd";
  ref.hub_name = kAppName;
  store::ManifestRenderRef render;
  render.revision = kRevision;
  render.source_type = "Directory";
  render.render_error = std::move(render_error);
  render.payload_hash = "bundle-hash-1";
  render.version = kGeneration;
  render.last_published_at = std::chrono::system_clock::from_time_t(1'800'000'000);
  ref.manifest = std::move(render);
  return ref;
}

// The agent's report once it applied generation `applied` of RenderedPayload().
cloudevents::Event BundleStatusEvent(int seq, int applied) {
  auto cond = [applied](const std::string& type, int64_t generation) {
    return cloudevents::Condition{
        .type = type,
        .status = "True",
        .observed_generation = generation,
        .last_transition_time = std::chrono::system_clock::from_time_t(1'800'000'004),
        .reason = "",
        .message = ""};
  };
  cloudevents::FeedbackValue service_type{.name = "ServiceType", .field_value = {}};
  service_type.field_value.type = cloudevents::FieldValueType::kString;
  service_type.field_value.string = "ClusterIP";
  cloudevents::ManifestBundleStatus status;
  status.conditions = {cond("Applied", applied)};
  status.resource_status = {
      cloudevents::ManifestCondition{.resource_meta = {.ordinal = 0,
                                                       .group = "",
                                                       .version = "v1",
                                                       .kind = "Service",
                                                       .resource = "services",
                                                       .name = "web",
                                                       .namespace_ = "shop"},
                                     .status_feedback = {service_type},
                                     .conditions = {cond("Applied", applied), cond("Available", 0),
                                                    cond("StatusFeedbackSynced", 0)}}};
  auto data = cloudevents::EncodeManifestBundleStatus(status);
  EXPECT_TRUE(data.ok()) << data.status();
  cloudevents::Event event = StatusEvent(seq, data.value_or("{}"));
  event.SetString(cloudevents::kExtResourceVersion, std::to_string(applied));
  return event;
}

TEST_F(SinkTest, AManifestDeliveryReportBecomesTheHubStatusArgoCdWouldShow) {
  store_.AddResourceForTest(ManifestResource(), RenderedPayload());
  StartSink();
  Deliver(BundleStatusEvent(1, kGeneration));
  const json status = HubStatus();
  EXPECT_EQ(status["sync"]["status"], "Synced");
  EXPECT_EQ(status["sync"]["revision"], kRevision);
  EXPECT_EQ(status["sync"]["comparedTo"]["destination"]["server"],
            "https://kubernetes.default.svc");
  EXPECT_EQ(status["health"]["status"], "Healthy");
  EXPECT_EQ(status["health"]["lastTransitionTime"], kube::KubeTime(clock_.Now()));
  ASSERT_EQ(status["resources"].size(), 1U);
  EXPECT_EQ(status["resources"][0]["kind"], "Service");
  EXPECT_EQ(status["resources"][0]["status"], "Synced");
  EXPECT_EQ(status["resources"][0]["health"]["status"], "Healthy");
  EXPECT_EQ(status["operationState"]["phase"], "Succeeded");
  EXPECT_EQ(status["operationState"]["startedAt"], "2027-01-15T08:00:00Z");
  ASSERT_EQ(status["history"].size(), 1U);
  EXPECT_EQ(status["history"][0]["revision"], kRevision);
  EXPECT_EQ(status["sourceType"], "Directory");
  EXPECT_FALSE(status.contains("conditions"));
  EXPECT_EQ(PatchedHealth(), (std::vector<std::string>{"Progressing", "Healthy"}))
      << "Progressing before Healthy, as for Application delivery";
  EXPECT_EQ(Dropped("no_feedback"), 0);
  EXPECT_EQ(Dropped("malformed"), 0);
  auto applied = store_.AppliedForTest(kResource);
  ASSERT_TRUE(applied.has_value());
  EXPECT_EQ(applied->sync_status, "Synced");

  // The same report again (another sequence id): nothing to write.
  const size_t patches = Patches();
  Deliver(BundleStatusEvent(2, kGeneration));
  EXPECT_EQ(Patches(), patches);
  EXPECT_EQ(Dropped("duplicate"), 1);
}

TEST_F(SinkTest, ARenderErrorReachesTheConditionsWhileTheLastBundleStays) {
  store_.AddResourceForTest(ManifestResource("rpc error: code = Unknown desc = kustomize failed"),
                            RenderedPayload());
  StartSink();
  Deliver(BundleStatusEvent(1, kGeneration));
  const json status = HubStatus();
  EXPECT_EQ(status["sync"]["status"], "Unknown");
  ASSERT_EQ(status["conditions"].size(), 1U);
  EXPECT_EQ(status["conditions"][0]["type"], "ComparisonError");
  EXPECT_EQ(status["conditions"][0]["message"],
            "Failed to load target state: rpc error: code = Unknown desc = kustomize failed");
  EXPECT_EQ(status["resources"][0]["status"], "Synced") << "the last good bundle is applied";
}

double RenderChanges(prometheus::Registry& registry, const std::string& path) {
  return MetricValue(registry, "mmi_status_render_changes_total", {{"path", path}});
}

TEST_F(SinkTest, ARenderChangeIsWrittenFromTheLastAgentReportWithoutAskingTheAgent) {
  store_.AddResourceForTest(ManifestResource(), RenderedPayload());
  StartSink();
  Deliver(BundleStatusEvent(1, kGeneration));
  EXPECT_FALSE(HubStatus().contains("conditions"));
  const size_t published = publisher_.published().size();

  // The next render fails: the dispatcher records the error and notifies. No agent event.
  store_.AddResourceForTest(ManifestResource("render timed out"), RenderedPayload());
  sink_->ManifestRenderChanged(kResource);
  sink_->RunUntilIdleForTest();
  json status = HubStatus();
  ASSERT_EQ(status["conditions"].size(), 1U);
  EXPECT_EQ(status["conditions"][0]["message"], "Failed to load target state: render timed out");
  EXPECT_EQ(status["resources"][0]["status"], "Synced") << "the last good bundle is applied";
  EXPECT_EQ(RenderChanges(registry_, "rederived"), 1);
  EXPECT_EQ(RenderChanges(registry_, "resync"), 0);

  // The error ends with a new commit whose render is the same bundle: a new revision.
  store::HubAppRef fixed = ManifestResource();
  fixed.manifest->revision = "a7d03b5";
  store_.AddResourceForTest(fixed, RenderedPayload());
  sink_->ManifestRenderChanged(kResource);
  sink_->RunUntilIdleForTest();
  status = HubStatus();
  EXPECT_FALSE(status.contains("conditions"));
  EXPECT_EQ(status["sync"]["revision"], "a7d03b5");
  EXPECT_EQ(status["sync"]["status"], "Synced");
  EXPECT_EQ(RenderChanges(registry_, "rederived"), 2);
  clock_.Advance(settings_.status_resync_min_interval);
  sink_->RunUntilIdleForTest();
  EXPECT_EQ(publisher_.published().size(), published) << "no status resync asked the agent";

  // The agent's next report of the same status is a duplicate: the hub has it already.
  const size_t patches = Patches();
  Deliver(BundleStatusEvent(2, kGeneration));
  EXPECT_EQ(Patches(), patches);
  EXPECT_EQ(Dropped("duplicate"), 1);
  auto applied = store_.AppliedForTest(kResource);
  ASSERT_TRUE(applied.has_value());
  EXPECT_FALSE(applied->status_hash.empty()) << "the agent's hash is saved with the rebuilt status";
}

TEST_F(SinkTest, RenderChangesOfOneResourceComingTogetherMakeOneWrite) {
  store_.AddResourceForTest(ManifestResource(), RenderedPayload());
  StartSink();
  Deliver(BundleStatusEvent(1, kGeneration));
  const size_t patches = Patches();
  const int lookups = store_.lookup_calls();
  for (const char* error : {"render timed out", "still timing out", "kustomize failed"}) {
    store_.AddResourceForTest(ManifestResource(error), RenderedPayload());
    sink_->ManifestRenderChanged(kResource);
  }
  sink_->RunUntilIdleForTest();
  EXPECT_EQ(store_.lookup_calls(), lookups + 1);
  EXPECT_EQ(Patches(), patches + 1);
  EXPECT_EQ(HubStatus()["conditions"][0]["message"],
            "Failed to load target state: kustomize failed");
}

TEST_F(SinkTest, ARenderChangeWithNoAgentReportHeldAsksTheAgent) {
  settings_.max_manifest_statuses = 0;  // nothing held: the lost-report status resync
  store_.AddResourceForTest(ManifestResource(), RenderedPayload());
  StartSink();
  Deliver(BundleStatusEvent(1, kGeneration));
  EXPECT_FALSE(HubStatus().contains("conditions"));
  const size_t published = publisher_.published().size();

  store_.AddResourceForTest(ManifestResource("render timed out"), RenderedPayload());
  sink_->ManifestRenderChanged(kResource);
  clock_.Advance(settings_.status_resync_min_interval);
  sink_->RunUntilIdleForTest();
  EXPECT_EQ(RenderChanges(registry_, "resync"), 1);
  ASSERT_EQ(publisher_.published().size(), published + 1);
  const cloudevents::Event request = publisher_.published().back();
  EXPECT_EQ(Listed(request), std::vector<std::string>{kResource});
  auto hashes = cloudevents::DecodeResourceStatusHashList(request.data.value_or(""));
  ASSERT_TRUE(hashes.ok()) << hashes.status();
  EXPECT_EQ(hashes->status_hashes[0].status_hash, "") << "so the agent resends what it has";

  // The agent answers with the status it already sent: the hub now shows the error.
  Deliver(BundleStatusEvent(2, kGeneration));
  const json status = HubStatus();
  ASSERT_EQ(status["conditions"].size(), 1U);
  EXPECT_EQ(status["conditions"][0]["message"], "Failed to load target state: render timed out");
  EXPECT_EQ(Dropped("duplicate"), 0);
}

TEST_F(SinkTest, AReportAheadOfTheRecordReadsTheRecordAgain) {
  store::HubAppRef old = ManifestResource();
  old.manifest->version = kGeneration - 1;
  store_.AddResourceForTest(old, RenderedPayload());
  StartSink();
  Deliver(BundleStatusEvent(1, kGeneration - 1));
  EXPECT_EQ(HubStatus()["sync"]["status"], "Synced");
  const int lookups = store_.lookup_calls();
  // The dispatcher recorded generation 2; the agent's report of it comes first.
  store_.AddResourceForTest(ManifestResource(), RenderedPayload());
  Deliver(BundleStatusEvent(2, kGeneration));
  EXPECT_EQ(store_.lookup_calls(), lookups + 1);
  EXPECT_EQ(HubStatus()["sync"]["status"], "Synced");
  EXPECT_EQ(HubStatus()["operationState"]["operation"]["sync"]["revision"], kRevision);
}

TEST_F(SinkTest, AnApplicationDeliveryReportWithoutFeedbackIsStillDropped) {
  StartSink();
  Deliver(BundleStatusEvent(1, kGeneration));  // kResource is in Application delivery here
  EXPECT_EQ(Dropped("no_feedback"), 1);
  EXPECT_EQ(Patches(), 0U);
}

}  // namespace
}  // namespace mmi::status_sink
