// ChangeRecorder: batches recorded, refused batches retried, published events followed.
#include "services/dispatcher/apps/change_recorder.h"

#include <gtest/gtest.h>

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
using ChangeRecorderTest = PipelineTest;

TEST_F(ChangeRecorderTest, AnUnconfirmedDeleteRequestIsSentAgainUntilTheAgentConfirms) {
  Process& p = StartThenDeleteOnTheHub();
  const std::string id = IdOf("cluster1", "argocd", "guestbook");

  clock_.Advance(std::chrono::seconds(59));
  p.RunAll();
  EXPECT_EQ(p.publisher.accepted().size(), 2U) << "not before a minute";
  clock_.Advance(std::chrono::seconds(2));
  p.RunAll();
  auto published = p.publisher.accepted();
  ASSERT_EQ(published.size(), 3U);
  EXPECT_EQ(published[2].type, cloudevents::kSpecDeleteRequestType);
  EXPECT_EQ(published[2].ResourceId().value(), id);
  EXPECT_EQ((*store_.GetResource(id))->deletion_state, store::DeletionState::kDeleteRequested);
  EXPECT_EQ(
      MetricValue(p.registry, "mmi_dispatcher_decisions_total", {{"decision", "delete_resent"}}),
      1);

  clock_.Advance(std::chrono::seconds(61));
  p.RunAll();
  EXPECT_EQ(p.publisher.accepted().size(), 3U) << "the second wait is twice as long";
  clock_.Advance(std::chrono::seconds(60));
  p.RunAll();
  EXPECT_EQ(p.publisher.accepted().size(), 4U);

  ASSERT_TRUE(store_.MarkDeletionConfirmed(id).ok());
  p.reconciler.OnDeletionConfirmed(id);
  p.RunAll();
  EXPECT_TRUE(absl::IsNotFound(hub_.Get(ApplicationsRef("argocd"), "guestbook").status()));
  clock_.Advance(std::chrono::minutes(10));
  p.RunAll();
  EXPECT_EQ(p.publisher.accepted().size(), 4U) << "nothing more once confirmed";
}

// The agent's Deleted arrives while a resend of the delete request is being recorded (the key is
// busy, its Record() transaction on the worker pool): the recorded state (kDeleteRequested) must
// not overwrite the confirmation. Worst order: the status sink commits first, so the resend's
// upsert also sets the store row back to kDeleteRequested (no sweep or restart would find it);
// without a REST look-up (not gRPC) nothing else would ever confirm it again.
TEST_F(ChangeRecorderTest, AConfirmationWhileAResendIsRecordedStillReleasesTheFinalizer) {
  Process& p = StartThenDeleteOnTheHub();
  const std::string id = IdOf("cluster1", "argocd", "guestbook");

  const int records = store_.record_calls();
  clock_.Advance(std::chrono::seconds(61));
  p.loop.RunUntilIdleForTest();  // the resend decided: its Record() waits on the worker pool
  ASSERT_GE(p.workers.Pending(), 1U);
  ASSERT_EQ(store_.record_calls(), records);
  ASSERT_TRUE(store_.MarkDeletionConfirmed(id).ok());
  p.reconciler.OnDeletionConfirmed(id);
  p.loop.RunUntilIdleForTest();  // the confirmation reaches the busy key
  EXPECT_TRUE(store_.GetResource(id)->has_value()) << "not finished while the resend records";
  p.RunAll();  // Record() (the row back to kDeleteRequested), then its outcome on the loop
  ASSERT_EQ(store_.record_calls(), records + 1);

  EXPECT_EQ(p.publisher.accepted().size(), 3U) << "the resend itself went out";
  EXPECT_TRUE(absl::IsNotFound(hub_.Get(ApplicationsRef("argocd"), "guestbook").status()))
      << "the finalizer was released, so the hub deleted the Application";
  EXPECT_FALSE(store_.GetResource(id)->has_value());
  EXPECT_FALSE(p.reconciler.ResourceForTest(id).has_value());
  clock_.Advance(std::chrono::minutes(20));
  p.RunAll();
  EXPECT_EQ(p.publisher.accepted().size(), 3U) << "no further resend once confirmed";
}

TEST_F(ChangeRecorderTest, AFailedRecordIsRetriedAndNothingIsPublishedBeforeIt) {
  PutApp(PullApp("argocd", "guestbook", "cluster1"));
  store_.FailWithForTest(absl::UnavailableError("postgres down"));
  process_ = std::make_unique<Process>(clock_, store_, hub_, apps_, clusters_);
  process_->reconciler.Activate();
  process_->RunAll();
  EXPECT_FALSE(process_->reconciler.loaded());
  EXPECT_TRUE(process_->publisher.published().empty());

  store_.FailWithForTest(absl::OkStatus());
  clock_.Advance(std::chrono::minutes(2));
  process_->RunAll();
  EXPECT_TRUE(process_->reconciler.loaded());
  ASSERT_EQ(process_->publisher.accepted().size(), 1U);
}

}  // namespace
}  // namespace mmi::dispatcher::testing
