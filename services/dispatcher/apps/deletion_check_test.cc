// DeletionCheck: over gRPC, a resent delete request also asks Maestro's REST API; a 404 confirms
// the deletion as the status sink's Deleted does. Through the pipeline, on fakes.
#include "services/dispatcher/apps/deletion_check.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "libs/common/testing/log_capture.h"
#include "libs/transport/testing/metric_value.h"
#include "services/dispatcher/apps/testing/pipeline_fixture.h"
#include "services/dispatcher/apps/testing/reconciler_fixture.h"

namespace mmi::dispatcher::testing {
namespace {

using nlohmann::json;
using transport::testing::MetricValue;

// Plays Maestro's `GET /resource-bundles/<id>`: `answer` for every id (true = 200, false = 404),
// with the ids asked in order. Runs on the worker pool, which the tests drive from their thread.
struct FakeMaestroRest {
  absl::StatusOr<bool> answer = true;
  std::vector<std::string> asked;

  DeletionCheck::Lookup AsLookup() {
    return [this](const std::string& id) {
      asked.push_back(id);
      return answer;
    };
  }
};

double Checks(const Process& p, const std::string& result) {
  return MetricValue(p.registry, "mmi_dispatcher_deletion_checks_total", {{"result", result}});
}

bool HasFinalizer(kube::testing::FakeKubeClient& hub, const std::string& name) {
  absl::StatusOr<json> app = hub.Get(ApplicationsRef("argocd"), name);
  return app.ok() && (*app)["metadata"]["finalizers"] == json::array({kResourcesFinalizer});
}

// Lines of `text` that contain `needle`.
size_t Count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  size_t line = 0;
  while (line < text.size()) {
    size_t end = text.find('\n', line);
    end = end == std::string::npos ? text.size() : end;
    n += text.substr(line, end - line).find(needle) != std::string::npos ? 1 : 0;
    line = end + 1;
  }
  return n;
}

class DeletionCheckTest : public PipelineTest {
 protected:
  // The Applications argocd/<names> on cluster1 dispatched, then deleted on the hub: their
  // delete requests published, not confirmed (the status sink missed Maestro's Deleted).
  Process& DispatchThenDelete(const std::vector<std::string>& names, ReconcilerSettings settings,
                              FakeMaestroRest& maestro) {
    for (const auto& name : names) {
      PutApp(PullApp("argocd", name, "cluster1"));
    }
    Process& p = Start(settings, maestro.AsLookup());
    for (const auto& name : names) {
      EXPECT_TRUE(hub_.Delete(ApplicationsRef("argocd"), name, {}).ok());
      Sync("argocd", name);
    }
    p.RunAll();
    EXPECT_EQ(p.publisher.accepted().size(), 2 * names.size());
    return p;
  }
};

TEST_F(DeletionCheckTest, AResendAsksMaestroAndItsNotFoundReleasesTheFinalizer) {
  FakeMaestroRest maestro;
  maestro.answer = false;  // Maestro removed it: its agent confirmed, we missed the Deleted
  Process& p = DispatchThenDelete({"guestbook"}, {}, maestro);
  const std::string id = IdOf("cluster1", "argocd", "guestbook");
  EXPECT_TRUE(maestro.asked.empty()) << "the first delete request asks nothing";
  EXPECT_TRUE(HasFinalizer(hub_, "guestbook"));

  clock_.Advance(std::chrono::seconds(60));  // the resend delay
  p.RunAll();
  ASSERT_EQ(maestro.asked, std::vector<std::string>{id});
  EXPECT_EQ(p.publisher.accepted().size(), 3U);  // the resend went out too
  EXPECT_TRUE(absl::IsNotFound(hub_.Get(ApplicationsRef("argocd"), "guestbook").status()))
      << "the finalizer was released, so the hub deleted the Application";
  EXPECT_FALSE(store_.GetResource(id)->has_value());
  EXPECT_FALSE(p.reconciler.ResourceForTest(id).has_value());
  EXPECT_EQ(Checks(p, "gone"), 1);
  EXPECT_EQ(MetricValue(p.registry, "mmi_dispatcher_decisions_total",
                        {{"decision", "finalizer_released"}}),
            1);
}

TEST_F(DeletionCheckTest, AResourceMaestroStillHoldsKeepsWaitingAndIsAskedAtTheNextResend) {
  FakeMaestroRest maestro;  // 200: marked deleting, the agent has not confirmed
  Process& p = DispatchThenDelete({"guestbook"}, {}, maestro);
  const std::string id = IdOf("cluster1", "argocd", "guestbook");

  clock_.Advance(std::chrono::seconds(60));
  p.RunAll();
  EXPECT_EQ(maestro.asked.size(), 1U);
  EXPECT_EQ(Checks(p, "present"), 1);
  EXPECT_TRUE(HasFinalizer(hub_, "guestbook"));
  EXPECT_EQ(p.reconciler.ResourceForTest(id)->state, store::DeletionState::kDeleteRequested);

  // Not asked again before the next resend (twice the delay).
  clock_.Advance(std::chrono::seconds(119));
  p.RunAll();
  EXPECT_EQ(maestro.asked.size(), 1U);
  maestro.answer = false;
  clock_.Advance(std::chrono::seconds(1));
  p.RunAll();
  EXPECT_EQ(maestro.asked.size(), 2U);
  EXPECT_FALSE(p.reconciler.ResourceForTest(id).has_value());
  EXPECT_FALSE(HasFinalizer(hub_, "guestbook"));
}

TEST_F(DeletionCheckTest, FailuresAreCountedLoggedOnceAndAskedAgainAfterThePause) {
  FakeMaestroRest maestro;
  maestro.answer = absl::UnavailableError("GET .../resource-bundles/x failed: Connection refused");
  ReconcilerSettings settings;
  settings.deletion_check.error_pause = std::chrono::seconds(30);
  Process& p = DispatchThenDelete({"guestbook"}, settings, maestro);
  const std::string id = IdOf("cluster1", "argocd", "guestbook");
  mmi::testing::LogCapture logs;

  clock_.Advance(std::chrono::seconds(60));
  p.RunAll();
  EXPECT_EQ(maestro.asked.size(), 1U);
  clock_.Advance(std::chrono::seconds(29));
  p.RunAll();
  EXPECT_EQ(maestro.asked.size(), 1U) << "nothing asked during the pause";
  for (int i = 0; i < 3; ++i) {
    clock_.Advance(std::chrono::seconds(30));
    p.RunAll();
  }
  EXPECT_EQ(maestro.asked.size(), 4U);
  EXPECT_EQ(Checks(p, "error"), 4);
  EXPECT_EQ(Count(logs.text(), "cannot ask Maestro's REST API"), 1U) << logs.text();
  EXPECT_TRUE(HasFinalizer(hub_, "guestbook"));

  // Back: the next look-up (with the resend due at 180 s, whose recording it waits for) confirms.
  maestro.answer = false;
  clock_.Advance(std::chrono::seconds(30));
  p.RunAll();
  clock_.Advance(std::chrono::seconds(1));
  p.RunAll();
  EXPECT_GE(maestro.asked.size(), 5U);
  EXPECT_FALSE(p.reconciler.ResourceForTest(id).has_value());
  EXPECT_EQ(Count(logs.text(), "Maestro's REST API answers again"), 1U) << logs.text();
}

TEST_F(DeletionCheckTest, LookUpsAreRateLimitedAndTheQueueIsBounded) {
  FakeMaestroRest maestro;  // every one still held
  ReconcilerSettings settings;
  settings.deletion_check.max_requests_per_second = 2;
  settings.deletion_check.max_in_flight = 1;
  settings.deletion_check.max_queued = 5;
  std::vector<std::string> names;
  for (int i = 0; i < 10; ++i) {
    names.push_back("app" + std::to_string(i));
  }
  Process& p = DispatchThenDelete(names, settings, maestro);

  clock_.Advance(std::chrono::seconds(60));  // ten resends at once
  p.RunAll();
  EXPECT_EQ(p.publisher.accepted().size(), 30U);
  EXPECT_EQ(maestro.asked.size(), 1U) << "one GET now, the next 500 ms later";
  EXPECT_EQ(Checks(p, "dropped"), 4) << "1 in flight + 5 queued; the rest wait for a resend";
  EXPECT_EQ(p.reconciler.DeletionChecksQueuedForTest(), 5U);
  clock_.Advance(std::chrono::milliseconds(500));
  p.RunAll();
  EXPECT_EQ(maestro.asked.size(), 2U);
  // A token bucket of one: a pause does not let a burst through afterwards.
  clock_.Advance(std::chrono::milliseconds(2000));
  p.RunAll();
  EXPECT_EQ(maestro.asked.size(), 3U);
  for (int i = 0; i < 3; ++i) {
    clock_.Advance(std::chrono::milliseconds(500));
    p.RunAll();
  }
  EXPECT_EQ(maestro.asked.size(), 6U);
  EXPECT_EQ(p.reconciler.DeletionChecksQueuedForTest(), 0U);
  EXPECT_EQ(MetricValue(p.registry, "mmi_dispatcher_deletion_checks_queued", {}), 0);
}

TEST_F(DeletionCheckTest, AConfirmationFromTheStatusSinkMeanwhileSkipsTheLookUp) {
  FakeMaestroRest maestro;
  ReconcilerSettings settings;
  settings.deletion_check.max_requests_per_second = 1;
  settings.deletion_check.max_in_flight = 1;
  Process& p = DispatchThenDelete({"a", "b"}, settings, maestro);
  clock_.Advance(std::chrono::seconds(60));
  p.RunAll();
  ASSERT_EQ(maestro.asked.size(), 1U);  // the other waits a second
  const std::string other = maestro.asked[0] == IdOf("cluster1", "argocd", "a")
                                ? IdOf("cluster1", "argocd", "b")
                                : IdOf("cluster1", "argocd", "a");
  ASSERT_TRUE(store_.MarkDeletionConfirmed(other).ok());
  p.reconciler.OnDeletionConfirmed(other);
  p.RunAll();
  clock_.Advance(std::chrono::seconds(1));
  p.RunAll();
  EXPECT_EQ(maestro.asked.size(), 1U);
  EXPECT_FALSE(p.reconciler.ResourceForTest(other).has_value());
}

}  // namespace
}  // namespace mmi::dispatcher::testing
