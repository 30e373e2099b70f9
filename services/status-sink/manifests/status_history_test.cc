#include "services/status-sink/manifests/status_history.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "libs/kube_object/object.h"

namespace mmi::status_sink {
namespace {

using std::chrono::seconds;
using TimePoint = std::chrono::system_clock::time_point;

const TimePoint kT0 = TimePoint(seconds(1'800'000'000));

// What ApplicationStatusOf returns, reduced to the members StatusHistory reads.
nlohmann::json Status(const std::string& health, const std::string& phase,
                      const std::string& revision, const std::string& error = "") {
  nlohmann::json status = {{"health", {{"status", health}}}};
  if (!phase.empty()) {
    status["operationState"] = {{"phase", phase},
                                {"startedAt", "2027-01-15T08:00:00Z"},
                                {"finishedAt", "2027-01-15T08:00:05Z"},
                                {"syncResult", {{"revision", revision}}}};
  }
  if (!error.empty()) {
    status["conditions"] = {{{"type", "ComparisonError"},
                             {"message", error},
                             {"lastTransitionTime", "set by the mapping"}}};
  }
  return status;
}

TEST(StatusHistoryTest, HealthKeepsItsTransitionTimeUntilItChanges) {
  StatusHistory history;
  nlohmann::json first = Status("Progressing", "Running", "a");
  history.Apply("r1", first, kT0);
  EXPECT_EQ(first["health"]["lastTransitionTime"], kube::KubeTime(kT0));
  nlohmann::json same = Status("Progressing", "Running", "a");
  history.Apply("r1", same, kT0 + seconds(30));
  EXPECT_EQ(same["health"]["lastTransitionTime"], kube::KubeTime(kT0));
  nlohmann::json healthy = Status("Healthy", "Succeeded", "a");
  history.Apply("r1", healthy, kT0 + seconds(60));
  EXPECT_EQ(healthy["health"]["lastTransitionTime"], kube::KubeTime(kT0 + seconds(60)));
  nlohmann::json other = Status("Healthy", "Running", "a");
  history.Apply("r2", other, kT0 + seconds(90));  // per resource
  EXPECT_EQ(other["health"]["lastTransitionTime"], kube::KubeTime(kT0 + seconds(90)));
}

TEST(StatusHistoryTest, AConditionKeepsItsTimeWhileItsMessageStays) {
  StatusHistory history;
  nlohmann::json first = Status("Healthy", "", "", "Failed to load target state: boom");
  history.Apply("r1", first, kT0);
  EXPECT_EQ(first["conditions"][0]["lastTransitionTime"], kube::KubeTime(kT0));
  nlohmann::json again = Status("Healthy", "", "", "Failed to load target state: boom");
  history.Apply("r1", again, kT0 + seconds(10));
  EXPECT_EQ(again["conditions"][0]["lastTransitionTime"], kube::KubeTime(kT0));
  nlohmann::json changed = Status("Healthy", "", "", "Failed to load target state: other");
  history.Apply("r1", changed, kT0 + seconds(20));
  EXPECT_EQ(changed["conditions"][0]["lastTransitionTime"], kube::KubeTime(kT0 + seconds(20)));
  nlohmann::json gone = Status("Healthy", "", "");
  history.Apply("r1", gone, kT0 + seconds(30));
  nlohmann::json back = Status("Healthy", "", "", "Failed to load target state: other");
  history.Apply("r1", back, kT0 + seconds(40));  // a new episode: a new time
  EXPECT_EQ(back["conditions"][0]["lastTransitionTime"], kube::KubeTime(kT0 + seconds(40)));
}

TEST(StatusHistoryTest, HistoryHasOneEntryPerSucceededRevisionNewestLastAtMostTheLimit) {
  StatusHistory history(/*max_history=*/3);
  nlohmann::json running = Status("Progressing", "Running", "rev-0");
  history.Apply("r1", running, kT0);
  EXPECT_FALSE(running.contains("history"));  // nothing succeeded yet
  for (int i = 0; i < 5; ++i) {
    const std::string revision = "rev-" + std::to_string(i);
    nlohmann::json done = Status("Healthy", "Succeeded", revision);
    history.Apply("r1", done, kT0 + seconds(i));
    nlohmann::json repeated = Status("Healthy", "Succeeded", revision);  // the same revision
    history.Apply("r1", repeated, kT0 + seconds(i) + std::chrono::milliseconds(500));
    ASSERT_TRUE(repeated.contains("history"));
    EXPECT_EQ(repeated["history"].back()["revision"], revision);
    EXPECT_EQ(repeated["history"].back()["id"], i);
  }
  nlohmann::json last = Status("Degraded", "Failed", "rev-5");  // a failed sync: no entry
  history.Apply("r1", last, kT0 + seconds(10));
  ASSERT_EQ(last["history"].size(), 3U);
  EXPECT_EQ(last["history"][0]["revision"], "rev-2");
  EXPECT_EQ(last["history"][2]["revision"], "rev-4");
  EXPECT_EQ(last["history"][2]["deployedAt"], "2027-01-15T08:00:05Z");
  EXPECT_EQ(last["history"][2]["deployStartedAt"], "2027-01-15T08:00:00Z");
  history.Forget("r1");
  nlohmann::json fresh = Status("Healthy", "Running", "rev-6");
  history.Apply("r1", fresh, kT0 + seconds(20));
  EXPECT_FALSE(fresh.contains("history"));
  EXPECT_EQ(history.size(), 1U);
}

}  // namespace
}  // namespace mmi::status_sink
