#include "tools/fleet-sim/fleet_simulator.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "libs/cloudevents/manifest_bundle.h"
#include "libs/cloudevents/resync.h"
#include "libs/common/testing/fake_clock.h"
#include "prometheus/registry.h"
#include "tests/support/wait.h"

namespace mmi::fleet_sim {
namespace {

using cloudevents::Event;
using std::chrono::seconds;

constexpr std::string_view kSource = "mmi-dispatcher";
constexpr std::string_view kCluster = "cluster1";

// Records what the loop publishes; while held, Publish blocks (a transport out of room: the loop
// waits in it, as behind the MQTT client's in-flight window).
class RecordingTransport final : public AgentTransport {
 public:
  absl::Status Start(ReceiveHandler on_receive, SubscribedHandler /*on_subscribed*/) override {
    absl::MutexLock lock(&mu_);
    on_receive_ = std::move(on_receive);
    return absl::OkStatus();
  }
  void Publish(Event event, PublishDone done) override {
    {
      absl::MutexLock lock(&mu_);
      waiting_ += held_ ? 1 : 0;
      mu_.Await(absl::Condition(
          +[](RecordingTransport* self)
               ABSL_EXCLUSIVE_LOCKS_REQUIRED(self->mu_) { return !self->held_; },
          this));
      published_.push_back(std::move(event));
    }
    std::move(done)(absl::OkStatus());
  }
  void Stop() override { Hold(false); }
  bool connected() const override { return true; }

  void Receive(Event event) {
    ReceiveHandler* handler = nullptr;
    {
      absl::MutexLock lock(&mu_);
      handler = &on_receive_;
    }
    (*handler)(ReceivedEvent{std::string(kCluster), std::move(event)});
  }
  void Hold(bool held) {
    absl::MutexLock lock(&mu_);
    held_ = held;
  }
  int waiting() const {
    absl::MutexLock lock(&mu_);
    return waiting_;
  }
  std::vector<Event> published() const {
    absl::MutexLock lock(&mu_);
    return published_;
  }

 private:
  mutable absl::Mutex mu_;
  ReceiveHandler on_receive_ ABSL_GUARDED_BY(mu_);
  bool held_ ABSL_GUARDED_BY(mu_) = false;
  int waiting_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<Event> published_ ABSL_GUARDED_BY(mu_);
};

// A JSON event from the source to the test's cluster.
Event SourceEvent(std::string id, std::string_view type) {
  Event event;
  event.id = std::move(id);
  event.source = std::string(kSource);
  event.type = std::string(type);
  event.data_content_type = std::string(cloudevents::kJsonContentType);
  event.SetString(cloudevents::kExtClusterName, std::string(kCluster));
  event.SetString(cloudevents::kExtOriginalSource, "");
  return event;
}

Event CreateEvent(const std::string& id) {
  cloudevents::ManifestBundle bundle;
  bundle.manifests.push_back(
      {{"apiVersion", "argoproj.io/v1alpha1"},
       {"kind", "Application"},
       {"metadata", {{"name", "app-" + id}, {"namespace", "openshift-gitops"}}},
       {"spec",
        {{"project", "default"},
         {"destination",
          {{"namespace", "guestbook"}, {"server", "https://kubernetes.default.svc"}}},
         {"source", {{"repoURL", "https://example.com/apps.git"}, {"path", "guestbook"}}}}}});
  Event event = SourceEvent("spec-" + id, cloudevents::kSpecCreateRequestType);
  event.SetString(cloudevents::kExtResourceId, id);
  event.SetString(cloudevents::kExtResourceVersion, "1");
  event.SetString(cloudevents::kExtMetadata, R"({"name":"app","namespace":"cluster1"})");
  event.SetString(cloudevents::kExtLogTracing, "{}");
  event.data = *cloudevents::EncodeManifestBundle(bundle);
  return event;
}

Event StatusResyncFor(const std::string& id) {
  cloudevents::ResourceStatusHashList list;
  list.status_hashes.push_back({id, ""});  // the source holds nothing: the agent answers
  Event event = SourceEvent("resync-" + id, cloudevents::kStatusResyncRequestType);
  event.data = *cloudevents::EncodeResourceStatusHashList(list);
  return event;
}

// A tick's churn larger than the transport takes at once is published in slices, and an event
// received meanwhile (here the sink's status resync request) is answered after the current
// slice, not after the whole churn: in the fifth full-scale run one tick's ~9 minutes of
// refreshes held back the answers the cold start's last first statuses waited for.
TEST(FleetSimulatorTest, ReceivedEventsAreAnsweredBetweenSlicesOfATicksChurn) {
  constexpr int kWorks = 100;
  constexpr std::size_t kSlice = 10;
  testing::FakeClock clock;
  prometheus::Registry registry;
  FleetMetrics metrics(registry);
  RecordingTransport transport;
  SimulatorSettings settings;
  settings.fleet.cluster_prefix = "cluster";
  settings.fleet.clusters = 1;
  settings.fleet.agent.refresh_min = seconds(120);
  settings.fleet.agent.refresh_max = seconds(180);
  settings.tick = std::chrono::milliseconds(50);
  settings.churn_slice = kSlice;
  FleetSimulator simulator(settings, transport, clock, metrics);
  ASSERT_TRUE(simulator.Start().ok());

  for (int i = 0; i < kWorks; ++i) {
    transport.Receive(CreateEvent("res-" + std::to_string(i)));
  }
  ASSERT_TRUE(testing::WaitFor([&] { return transport.published().size() >= kWorks; }, seconds(10)))
      << "one applied status per work";
  ASSERT_EQ(transport.published().size(), static_cast<std::size_t>(kWorks)) << "no churn yet";

  // Every work's refresh falls due; the first churn publish blocks in the transport.
  transport.Hold(true);
  clock.Advance(seconds(181));
  ASSERT_TRUE(testing::WaitFor([&] { return transport.waiting() > 0; }, seconds(10),
                               std::chrono::milliseconds(5)))
      << "the loop did not publish the due churn";
  transport.Receive(StatusResyncFor("res-7"));
  transport.Hold(false);

  ASSERT_TRUE(
      testing::WaitFor([&] { return transport.published().size() >= 2 * kWorks + 1; }, seconds(10)))
      << transport.published().size() << " published";
  const std::vector<Event> published = transport.published();
  std::size_t answer = published.size();
  for (std::size_t i = kWorks; i < published.size(); ++i) {
    if (published[i].type == cloudevents::kStatusResyncResponseType) {
      EXPECT_EQ(answer, published.size()) << "answered twice";
      answer = i;
    }
  }
  ASSERT_LT(answer, published.size()) << "the status resync request was not answered";
  const std::size_t churn_before = answer - kWorks;
  EXPECT_LE(churn_before, kSlice) << "the answer waited behind more than one slice of churn";
  EXPECT_EQ(published.size() - kWorks - 1, static_cast<std::size_t>(kWorks))
      << "every due refresh is published, once";
  EXPECT_EQ(metrics.StatusesSent("refresh").Value(), kWorks);
  EXPECT_EQ(metrics.status_resyncs_answered.Value(), 1);
  EXPECT_TRUE(testing::WaitFor([&] { return metrics.churn_backlog.Value() == 0; }, seconds(10)));
  simulator.Stop();
}

// A snapshot request is answered by the loop after the events received before it.
TEST(FleetSimulatorTest, SnapshotIsTakenOnTheLoopAfterEarlierEvents) {
  testing::FakeClock clock;
  prometheus::Registry registry;
  FleetMetrics metrics(registry);
  RecordingTransport transport;
  SimulatorSettings settings;
  settings.fleet.cluster_prefix = "cluster";
  settings.fleet.clusters = 1;
  settings.max_intake = 1;  // the request is never dropped by the intake bound
  FleetSimulator simulator(settings, transport, clock, metrics);
  ASSERT_TRUE(simulator.Start().ok());
  transport.Receive(CreateEvent("res-1"));

  absl::Mutex mu;
  std::vector<nlohmann::json> snapshots;
  simulator.RequestSnapshot([&](nlohmann::json snapshot) {
    absl::MutexLock lock(&mu);
    snapshots.push_back(std::move(snapshot));
  });
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        absl::MutexLock lock(&mu);
        return !snapshots.empty();
      },
      seconds(10)));
  simulator.Stop();
  const nlohmann::json& works = snapshots[0]["clusters"]["cluster1"]["works"];
  ASSERT_EQ(works.size(), 1u);
  EXPECT_EQ(works[0]["id"], "res-1");
  EXPECT_EQ(works[0]["version"], 1);
  EXPECT_EQ(works[0]["specs_received"], 1);
  EXPECT_EQ(works[0]["duplicate_specs"], 0);
}

}  // namespace
}  // namespace mmi::fleet_sim
