#include "services/dispatcher/gitops/spec_run.h"

#include <gtest/gtest.h>

#include <chrono>

#include "services/dispatcher/gitops/gitops_cluster.h"

namespace mmi::dispatcher {
namespace {

using nlohmann::json;

const std::chrono::system_clock::time_point kNow{std::chrono::seconds(1'700'000'000)};

std::string ConditionOf(const json& status, const std::string& type, const char* field) {
  for (const auto& c : status.value("conditions", json::array())) {
    if (c.value("type", "") == type) {
      return c.value(field, "");
    }
  }
  return "";
}

TEST(SpecRunTest, StartsWantingNothingAndKeepsTheStatusItWasGiven) {
  SpecRun run("ns/g", json{{"message", "before"}}, kNow);
  EXPECT_EQ(run.result().outcome, ReconcileOutcome::kSuccess);
  ASSERT_TRUE(run.result().wanted.has_value());
  EXPECT_TRUE(run.wanted().secrets.empty());
  EXPECT_EQ(run.result().status["message"], "before");
  run.Set(kCondReady, "True", kReasonSuccess, "fine");
  EXPECT_EQ(ConditionOf(run.result().status, kCondReady, "status"), "True");
}

TEST(SpecRunTest, AFailureSetsTheConditionAndMessageAndKeepsTheNewWishes) {
  SpecRun run("ns/g", json::object(), kNow);
  run.wanted().clusters.insert("edge-1");
  const SpecResult r = run.Fail(kCondPlacementResolved, kReasonPlacementNotFound, "no placement");
  EXPECT_EQ(r.outcome, ReconcileOutcome::kFailed);
  EXPECT_EQ(r.status["message"], "no placement");
  EXPECT_EQ(ConditionOf(r.status, kCondPlacementResolved, "status"), "False");
  EXPECT_EQ(ConditionOf(r.status, kCondPlacementResolved, "reason"), kReasonPlacementNotFound);
  ASSERT_TRUE(r.wanted.has_value());
  EXPECT_TRUE(r.wanted->clusters.contains("edge-1"));
}

TEST(SpecRunTest, FailKeepingAndTransientKeepWhatWasWantedBefore) {
  SpecRun keeping("ns/g", json::object(), kNow);
  const SpecResult kept =
      keeping.FailKeeping(kCondPlacementResolved, kReasonInvalidConfiguration, "bad decisions");
  EXPECT_EQ(kept.outcome, ReconcileOutcome::kFailed);
  EXPECT_FALSE(kept.wanted.has_value());

  SpecRun transient("ns/g", json::object(), kNow);
  const SpecResult retried = transient.Transient("GET Placement ns/p", absl::UnavailableError("x"));
  EXPECT_EQ(retried.outcome, ReconcileOutcome::kError);
  EXPECT_FALSE(retried.wanted.has_value());
  EXPECT_NE(retried.status["message"].get<std::string>().find("GET Placement ns/p"),
            std::string::npos);
}

}  // namespace
}  // namespace mmi::dispatcher
