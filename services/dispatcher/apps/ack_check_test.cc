// AckCheck: the end-to-end acknowledgement. What a reporting agent has not acknowledged is
// published again as a new version, with backoff; an acknowledged one is left alone. Through
// the pipeline, on fakes (the fake store plays the sink's saved acknowledgements).
#include "services/dispatcher/apps/ack_check.h"

#include <gtest/gtest.h>

#include <string>

#include "libs/cloudevents/manifest_bundle.h"
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

}  // namespace
}  // namespace mmi::dispatcher::testing
