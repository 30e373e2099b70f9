// AckCheck: the end-to-end acknowledgement. What a reporting agent has not acknowledged is
// published again as a new version, with backoff; an acknowledged one is left alone. Through
// the pipeline, on fakes (the fake store plays the sink's saved acknowledgements). Then the
// AckCheck alone in front of a simulated slow source (Maestro's one spec worker, 20 a second,
// in order): only late is not lost (docs/reliability.md finding 8).
#include "services/dispatcher/apps/ack_check.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "libs/cloudevents/manifest_bundle.h"
#include "libs/common/testing/fake_clock.h"
#include "libs/store/testing/fake_dispatch_store.h"
#include "libs/transport/testing/metric_value.h"
#include "services/dispatcher/apps/testing/pipeline_fixture.h"
#include "services/dispatcher/apps/testing/reconciler_fixture.h"

namespace mmi::dispatcher::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;
using transport::testing::MetricValue;

double Republished(const Process& p) {
  return MetricValue(p.registry, "mmi_dispatcher_decisions_total", {{"decision", "republish"}});
}

// The dispatch version stamped into the Application of a spec event.
std::string StampedVersion(const cloudevents::Event& event) {
  auto bundle = cloudevents::ManifestBundleOf(event);
  EXPECT_TRUE(bundle.ok()) << bundle.status();
  if (!bundle.ok()) {
    return "";
  }
  return bundle->manifests.front()["metadata"]["annotations"].value(kDispatchVersionAnnotation, "");
}

class AckCheckTest : public PipelineTest {
 protected:
  // "lost" published now, "later" 60 s later, both on cluster1; the agent acknowledged "later"
  // 10 s after its publish and never "lost".
  Process& LoseOne(ReconcilerSettings settings = {}) {
    PutApp(PullApp("argocd", "lost", "cluster1"));
    Process& p = Start(settings);
    p.RunAll();
    clock_.Advance(seconds(60));
    PutApp(PullApp("argocd", "later", "cluster1"));
    Sync("argocd", "later");
    p.RunAll();
    EXPECT_EQ(p.publisher.accepted().size(), 2U);
    store_.SetAckForTest(IdOf("cluster1", "argocd", "later"), 1, clock_.Now() + seconds(10));
    return p;
  }
};

TEST_F(AckCheckTest, AChangeALaterAcknowledgementOvertookIsPublishedAgainAsANewVersion) {
  Process& p = LoseOne();
  const std::string lost = IdOf("cluster1", "argocd", "lost");
  EXPECT_EQ(StampedVersion(p.publisher.accepted()[0]), "1");
  const std::string hash = p.reconciler.ResourceForTest(lost)->payload_hash;

  clock_.Advance(seconds(30));  // the check interval
  p.RunAll();
  ASSERT_EQ(p.publisher.accepted().size(), 3U);
  const cloudevents::Event again = p.publisher.accepted()[2];
  EXPECT_EQ(again.type, std::string(cloudevents::kSpecUpdateRequestType));
  EXPECT_EQ(*again.ResourceId(), lost);
  EXPECT_EQ(StampedVersion(again), "2") << "a changed payload, which Maestro cannot skip";
  EXPECT_EQ(p.reconciler.ResourceForTest(lost)->version, 2);
  EXPECT_EQ(p.reconciler.ResourceForTest(lost)->payload_hash, hash)
      << "the content hash does not count the stamp";
  EXPECT_EQ(Republished(p), 1);

  // Acknowledged now: nothing more, however long it runs.
  store_.SetAckForTest(lost, 2, clock_.Now());
  for (int i = 0; i < 10; ++i) {
    clock_.Advance(seconds(30));
    p.RunAll();
  }
  EXPECT_EQ(p.publisher.accepted().size(), 3U);
}

TEST_F(AckCheckTest, AnAgentThatNeverAppliesItGetsItAgainOnlyWithBackoff) {
  ReconcilerSettings settings;
  settings.ack_check.grace = seconds(30);
  settings.ack_check.timeout = seconds(60);
  Process& p = LoseOne(settings);
  const std::string lost = IdOf("cluster1", "argocd", "lost");
  const std::string later = IdOf("cluster1", "argocd", "later");
  // The agent keeps reporting "later" (alive) and never applies "lost".
  int sent = 0;
  for (int i = 0; i < 40; ++i) {  // 20 minutes
    clock_.Advance(seconds(30));
    store_.SetAckForTest(later, 1, clock_.Now());
    p.RunAll();
    sent = static_cast<int>(Republished(p));
  }
  // At 30 s x 2^n after each other (60, 120, 240, 480 s...) plus the timeout after each publish:
  // a handful in 20 minutes, not one per check.
  EXPECT_GE(sent, 3);
  EXPECT_LE(sent, 6);
  EXPECT_EQ(p.reconciler.ResourceForTest(lost)->version, 1 + sent);
}

TEST_F(AckCheckTest, TheCheckCanBeTurnedOff) {
  ReconcilerSettings off;
  off.ack_check.enabled = false;
  Process& p = LoseOne(off);
  for (int i = 0; i < 4; ++i) {
    clock_.Advance(seconds(30));
    p.RunAll();
  }
  EXPECT_EQ(p.publisher.accepted().size(), 2U) << "disabled: nothing is published again";
  EXPECT_EQ(Republished(p), 0);
}

// A source that is behind, as Maestro's spec worker: it sends what was published in order, 20 a
// second, to agents that acknowledge at once; it loses the first send of the ids in `lost`, or
// sends nothing while `dead`. The agents report what they hold every 30 s (Argo CD's refreshes).
class SlowSource {
 public:
  SlowSource(store::testing::FakeDispatchStore& store, mmi::testing::FakeClock& clock)
      : store_(store), clock_(clock) {}

  // Publishes resource `n` of `cluster` at `version` now (the broker accepted it).
  void Publish(int n, const std::string& cluster, int32_t version) {
    char id[40];
    std::snprintf(id, sizeof id, "00000000-0000-5000-8000-%012d", n);
    store::DispatchChange c;
    c.resource.resource_id = id;
    c.resource.cluster = cluster;
    c.resource.hub_namespace = "argocd";
    c.resource.hub_name = "app-" + std::to_string(n);
    c.resource.version = version;
    c.event.resource_id = id;
    c.event.cluster = cluster;
    c.event.action = version == 1 ? store::OutboxAction::kCreate : store::OutboxAction::kUpdate;
    c.event.version = version;
    auto seqs = store_.Record({c});
    ASSERT_TRUE(seqs.ok()) << seqs.status();
    ASSERT_TRUE(store_.MarkPublished(*seqs, clock_.Now()).ok());
    numbers_[id] = {n, cluster};
    queue_.push_back({id, version});
  }
  // What the AckCheck's republish does: the same resource again as the next version.
  bool Republish(const store::UnacknowledgedResource& r) {
    const auto& [n, cluster] = numbers_.at(r.resource_id);
    Publish(n, cluster, r.version + 1);
    return true;
  }
  // One second: up to 20 sent and acknowledged; every 30 s the agents report what they hold.
  void Tick() {
    clock_.Advance(std::chrono::seconds(1));
    for (int i = 0; i < kPerSecond && !dead && !queue_.empty(); ++i) {
      const auto [id, version] = queue_.front();
      queue_.pop_front();
      if (lost.contains(id) && !lost_once_.contains(id)) {
        lost_once_.insert(id);
        continue;
      }
      held_[id] = version;
      store_.SetAckForTest(id, version, clock_.Now());
    }
    if (++seconds_ % 30 == 0) {
      for (const auto& [id, version] : held_) {
        store_.SetAckForTest(id, version, clock_.Now());
      }
    }
  }
  // Resources whose latest version the agents hold.
  int Acknowledged() const {
    int n = 0;
    for (const auto& [id, version] : held_) {
      auto r = store_.GetResource(id);
      n += r.ok() && r->has_value() && (*r)->version == version ? 1 : 0;
    }
    return n;
  }
  static std::string Id(int n) {
    char id[40];
    std::snprintf(id, sizeof id, "00000000-0000-5000-8000-%012d", n);
    return id;
  }

  static constexpr int kPerSecond = 20;
  std::set<std::string> lost;
  bool dead = false;

 private:
  store::testing::FakeDispatchStore& store_;
  mmi::testing::FakeClock& clock_;
  std::deque<std::pair<std::string, int32_t>> queue_;
  std::map<std::string, std::pair<int, std::string>> numbers_;
  std::map<std::string, int32_t> held_;
  std::set<std::string> lost_once_;
  int seconds_ = 0;
};

class AckCheckBehindTest : public ::testing::Test {
 protected:
  AckCheckBehindTest() : metrics_(registry_, "fake") {}

  void Make(AckCheckSettings settings = {}) {
    check_ = std::make_unique<AckCheck>(
        AckCheck::Deps{.loop = loop_,
                       .workers = workers_,
                       .store = store_,
                       .metrics = metrics_,
                       .republish =
                           [this](const store::UnacknowledgedResource& r) {
                             republished_.push_back(r.resource_id);
                             return source_.Republish(r);
                           },
                       .handover_acked = nullptr},
        settings);
  }
  // `n` resources over 10 clusters, 100 a second (Maestro accepts faster than it sends).
  void PublishBurst(int first, int n) {
    for (int i = first; i < first + n; ++i) {
      source_.Publish(i, "cluster" + std::to_string(i % 10), 1);
      if ((i - first) % 100 == 99) {
        Second();
      }
    }
  }
  // One simulated second; a check every 15 s (the default interval).
  void Second() {
    source_.Tick();
    if (++seconds_ % 15 == 0) {
      check_->CheckNow();
      for (int i = 0; i < 100 && loop_.RunUntilIdleForTest() + workers_.RunUntilIdleForTest() > 0;
           ++i) {
      }
      max_waiting_ = std::max(max_waiting_, Waiting());
    }
  }
  double Waiting() const { return MetricValue(registry_, "mmi_dispatcher_ack_waiting", {}); }
  double Republishes(const std::string& reason) const {
    return MetricValue(registry_, "mmi_dispatcher_ack_republishes_total", {{"reason", reason}});
  }

  mmi::testing::FakeClock clock_;
  Loop loop_{clock_, "loop"};
  WorkerPool workers_{clock_, "workers", 1};
  store::testing::FakeDispatchStore store_;
  prometheus::Registry registry_;
  DispatcherMetrics metrics_;
  SlowSource source_{store_, clock_};
  std::unique_ptr<AckCheck> check_;
  std::vector<std::string> republished_;
  double max_waiting_ = 0;
  int seconds_ = 0;
};

TEST_F(AckCheckBehindTest, NothingIsPublishedAgainWhileAcknowledgementsArriveInOrder) {
  // Finding 8 scaled down: 10,000 waited longer than the 2 min timeout; here 2,000 wait up to
  // 80 s (20 s to publish, 100 s to send) behind a timeout of 1 min.
  AckCheckSettings settings;
  settings.timeout = std::chrono::seconds(60);
  Make(settings);
  PublishBurst(0, 2000);
  for (int i = 0; i < 150; ++i) {
    Second();
  }
  EXPECT_TRUE(republished_.empty()) << republished_.size() << ", first " << republished_.front();
  EXPECT_EQ(source_.Acknowledged(), 2000);
  // The timeout rule listed them (agents reporting, a minute unacknowledged): the old rule
  // would have published each again into the queue.
  EXPECT_GT(max_waiting_, 100);
  EXPECT_EQ(Waiting(), 0) << "all acknowledged: nothing waits";
}

TEST_F(AckCheckBehindTest, AChangeLostWhileLaterOnesAreAcknowledgedIsPublishedAgainOnce) {
  Make();
  source_.lost = {SlowSource::Id(100), SlowSource::Id(700)};
  PublishBurst(0, 1000);
  // Changes keep coming, 5 a second over every cluster (slower than the source sends), so
  // acknowledgements never stop: only evidence, not a stall, can tell the two were lost.
  int next = 1000;
  for (int i = 0; i < 150; ++i) {
    if (i % 2 == 0) {
      for (int k = 0; k < 10; ++k) {
        source_.Publish(next, "cluster" + std::to_string(next % 10), 1);
        ++next;
      }
    }
    Second();
  }
  for (int i = 0; i < 100; ++i) {
    Second();
  }
  EXPECT_EQ(republished_, (std::vector<std::string>{SlowSource::Id(100), SlowSource::Id(700)}));
  EXPECT_EQ(Republishes("overtaken") + Republishes("passed"), 2);
  EXPECT_EQ(Republishes("stalled"), 0);
  EXPECT_EQ(source_.Acknowledged(), next);
}

TEST_F(AckCheckBehindTest, TheLastChangeLostIsPublishedAgainOnceTheSourceIsIdle) {
  Make();
  source_.lost = {SlowSource::Id(999)};
  PublishBurst(0, 1000);
  for (int i = 0; i < 300; ++i) {
    Second();
  }
  // Nothing later to overtake it: once everything else is acknowledged, no acknowledgement
  // arrives any more and the timeout rule counts.
  EXPECT_EQ(republished_, (std::vector<std::string>{SlowSource::Id(999)}));
  EXPECT_EQ(Republishes("stalled"), 1);
  EXPECT_EQ(source_.Acknowledged(), 1000);
}

TEST_F(AckCheckBehindTest, ASourceThatSendsNothingGetsAtMostTheStallBound) {
  AckCheckSettings settings;
  settings.max_while_stalled = 50;
  Make(settings);
  PublishBurst(0, 100);
  for (int i = 0; i < 60; ++i) {
    Second();
  }
  ASSERT_EQ(source_.Acknowledged(), 100);
  source_.dead = true;  // the agents still report what they hold
  PublishBurst(100, 300);
  for (int i = 0; i < 600; ++i) {  // 10 minutes
    Second();
  }
  EXPECT_EQ(republished_.size(), 50U) << "the bound, not one per check";
  EXPECT_EQ(Republishes("stalled"), 50);

  // It sends again: acknowledgements arrive, the queue drains, nothing more is published again.
  source_.dead = false;
  for (int i = 0; i < 100; ++i) {
    Second();
  }
  EXPECT_EQ(republished_.size(), 50U);
  EXPECT_EQ(source_.Acknowledged(), 400);
}

}  // namespace
}  // namespace mmi::dispatcher::testing
