// OutboxGate: the outbox bound (ReconcilerSettings::max_outbox), through the pipeline.
#include "services/dispatcher/apps/outbox_gate.h"

#include <gtest/gtest.h>

#include <atomic>

#include "libs/cloudevents/manifest_bundle.h"
#include "libs/cloudevents/resource_id.h"
#include "libs/common/log.h"
#include "libs/common/testing/log_capture.h"
#include "libs/transport/testing/metric_value.h"
#include "services/dispatcher/apps/testing/pipeline_fixture.h"
#include "services/dispatcher/apps/testing/reconciler_fixture.h"

// In the fixture's namespace: its helpers need no using-declarations here.
namespace mmi::dispatcher::testing {
namespace {

using nlohmann::json;
using transport::testing::MetricValue;
using OutboxGateTest = PipelineTest;

size_t CountOf(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
    ++n;
  }
  return n;
}

using mmi::testing::LogCapture;

constexpr char kPausedLog[] = "outbox full: taking no new keys";
constexpr char kResumedLog[] = "outbox drained: taking keys again";

ReconcilerSettings BoundedSettings(size_t max_outbox) {
  ReconcilerSettings settings;
  settings.batch_size = 2;
  settings.max_inflight_batches = 1;
  settings.max_outbox = max_outbox;
  // Its periodic look-up is a timer of its own; these tests count the gate's.
  settings.ack_check.enabled = false;
  return settings;
}

double Paused(const Process& p) {
  return MetricValue(p.registry, "mmi_dispatcher_outbox_paused", {});
}

// Fails every publish for `cluster` with kFailedPrecondition, as Maestro's gRPC server does for
// a consumer it does not know (retried: the cluster may be registered any time); hands the
// others to `inner`.
class ClusterFailingPublisher final : public transport::Publisher {
 public:
  ClusterFailingPublisher(transport::Publisher& inner, std::string cluster)
      : inner_(inner), cluster_(std::move(cluster)) {}
  absl::Status Start() override { return inner_.Start(); }
  void Publish(cloudevents::Event event, transport::PublishCallback done) override {
    if (event.ClusterName().value_or("") == cluster_) {
      ++failed_;
      std::move(done)(absl::FailedPreconditionError("consumer is not registered"));
      return;
    }
    inner_.Publish(std::move(event), std::move(done));
  }
  void Stop() override { inner_.Stop(); }
  bool connected() const override { return inner_.connected(); }
  size_t max_in_flight() const override { return inner_.max_in_flight(); }
  int failed() const { return failed_.load(); }

 private:
  transport::Publisher& inner_;
  const std::string cluster_;
  std::atomic<int> failed_{0};
};

TEST_F(OutboxGateTest, WithTheBrokerAwayItRecordsUpToTheBoundThenPausesUntilTheBrokerIsBack) {
  for (int i = 0; i < 12; ++i) {
    PutApp(PullApp("argocd", "app-" + std::to_string(i), "cluster1"));
  }
  LogCapture logs;
  process_ = std::make_unique<Process>(clock_, store_, hub_, apps_, clusters_, BoundedSettings(4));
  Process& p = *process_;
  p.publisher.SetConnected(false);  // nothing leaves the outbox: every event stays ready
  p.reconciler.Activate();
  for (int i = 0; i < 20; ++i) {
    clock_.Advance(std::chrono::milliseconds(200));
    p.RunAll();
  }
  EXPECT_EQ(p.outbox.ready_or_in_flight(), 4U) << "recorded up to the bound, then waited";
  EXPECT_EQ(p.outbox.pending(), 4U);
  EXPECT_EQ(p.reconciler.queue_depth(), 8U);
  EXPECT_TRUE(p.publisher.published().empty());
  EXPECT_EQ(Paused(p), 1);
  EXPECT_EQ(CountOf(logs.text(), kPausedLog), 1U) << logs.text();
  EXPECT_NE(logs.text().find("\"max_outbox\":4"), std::string::npos) << logs.text();
  EXPECT_EQ(CountOf(logs.text(), kResumedLog), 0U);

  p.publisher.SetConnected(true);
  for (int i = 0; i < 50 && p.publisher.accepted().size() < 12; ++i) {
    clock_.Advance(std::chrono::milliseconds(200));
    p.RunAll();
  }
  EXPECT_EQ(p.publisher.accepted().size(), 12U);
  EXPECT_EQ(p.outbox.pending(), 0U);
  EXPECT_EQ(p.reconciler.queue_depth(), 0U);
  EXPECT_EQ(Paused(p), 0);
  EXPECT_GE(CountOf(logs.text(), kResumedLog), 1U) << logs.text();
  EXPECT_NE(logs.text().find("\"paused_ms\":"), std::string::npos) << logs.text();
}

TEST_F(OutboxGateTest, EventsFailingForGoodInRetryBackoffDoNotHoldBackOtherClusters) {
  clusters_.OnAdd(std::make_shared<const json>(ManagedCluster("cluster2")), false);
  for (int i = 0; i < 10; ++i) {  // cluster2: known on the hub, unknown to Maestro
    PutApp(PullApp("argocd", "lost-" + std::to_string(i), "cluster2"));
  }
  // Process with a publisher failing cluster2's events.
  Loop loop(clock_, "loop");
  WorkerPool workers(clock_, "workers", 1);
  transport::testing::FakePublisher fake;
  ClusterFailingPublisher publisher(fake, "cluster2");
  ASSERT_TRUE(publisher.Start().ok());
  prometheus::Registry registry;
  DispatcherMetrics metrics(registry, "fake");
  Outbox outbox(loop, workers, store_, publisher, clock_, metrics, {});
  Reconciler reconciler(
      ReconcilerDeps{loop, workers, store_, hub_, apps_, clusters_, outbox, metrics, clock_},
      BoundedSettings(4));
  const auto run_all = [&] {
    while (loop.RunUntilIdleForTest() + workers.RunUntilIdleForTest() > 0) {
    }
  };
  reconciler.Activate();
  run_all();
  ASSERT_EQ(outbox.pending(), 10U) << "all of cluster2's events recorded, none accepted";
  ASSERT_EQ(publisher.failed(), 10);

  // Ten events (more than the bound) fail over and over; cluster1's Applications still go out.
  for (int i = 0; i < 6; ++i) {
    const std::string name = "app-" + std::to_string(i);
    apps_.Set(PullApp("argocd", name, "cluster1"));
    reconciler.Enqueue("argocd/" + name);
    clock_.Advance(std::chrono::seconds(1));  // and cluster2's retries come due meanwhile
    run_all();
    ASSERT_EQ(fake.accepted().size(), static_cast<size_t>(i + 1)) << name;
    EXPECT_EQ(fake.accepted().back().ClusterName().value(), "cluster1");
  }
  EXPECT_GT(publisher.failed(), 10) << "cluster2's events were retried";
  EXPECT_EQ(outbox.pending(), 10U);
  EXPECT_EQ(outbox.ready_or_in_flight(), 0U) << "all in retry backoff";
  EXPECT_EQ(reconciler.queue_depth(), 0U);
  EXPECT_EQ(MetricValue(registry, "mmi_dispatcher_outbox_paused", {}), 0);
}

TEST_F(OutboxGateTest, WhilePausedNoTimerIsSetHoweverManyKeysArrive) {
  for (int i = 0; i < 4; ++i) {
    PutApp(PullApp("argocd", "app-" + std::to_string(i), "cluster1"));
  }
  LogCapture logs;
  process_ = std::make_unique<Process>(clock_, store_, hub_, apps_, clusters_, BoundedSettings(4));
  Process& p = *process_;
  p.publisher.SetConnected(false);
  p.reconciler.Activate();
  p.RunAll();
  ASSERT_EQ(p.outbox.ready_or_in_flight(), 4U);
  // One more key: ProcessKeys finds the outbox full.
  PutApp(PullApp("argocd", "app-4", "cluster1"));
  p.RunAll();
  ASSERT_EQ(Paused(p), 1);
  // Many keys and ticks while paused: each key posts one ProcessKeys, which returns at once and
  // sets no timer; the only timer left is the outbox's own reconnect poll.
  for (int i = 5; i < 105; ++i) {
    PutApp(PullApp("argocd", "app-" + std::to_string(i), "cluster1"));
    clock_.Advance(std::chrono::milliseconds(50));
    p.RunAll();
    ASSERT_LE(p.loop.Pending(), 1U) << "round " << i;
  }
  EXPECT_EQ(p.reconciler.queue_depth(), 101U);
  EXPECT_EQ(p.outbox.ready_or_in_flight(), 4U);
  EXPECT_EQ(CountOf(logs.text(), kPausedLog), 1U) << "once per pause";

  p.publisher.SetConnected(true);
  for (int i = 0; i < 200 && p.publisher.accepted().size() < 105; ++i) {
    clock_.Advance(std::chrono::milliseconds(200));
    p.RunAll();
  }
  EXPECT_EQ(p.publisher.accepted().size(), 105U);
  EXPECT_EQ(Paused(p), 0);
}

}  // namespace
}  // namespace mmi::dispatcher::testing
