#include "libs/kube/leader_elector.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "libs/common/testing/fake_clock.h"
#include "libs/kube/testing/fake_kube_client.h"

namespace mmi::kube {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;

ResourceRef Leases() { return {"coordination.k8s.io", "v1", "leases", "kube-system"}; }

LeaderElectionSettings Settings(const std::string& identity) {
  LeaderElectionSettings s;
  s.lease_namespace = "kube-system";
  s.lease_name = "mmi-dispatcher";
  s.identity = identity;
  s.lease_duration = seconds(15);
  s.renew_deadline = seconds(10);
  s.retry_period = seconds(2);
  return s;
}

class LeaderElectorTest : public ::testing::Test {
 protected:
  json Lease() { return *fake_.Get(Leases(), "mmi-dispatcher"); }

  testing::FakeKubeClient fake_;
  mmi::testing::FakeClock clock_;
};

TEST_F(LeaderElectorTest, TheFirstCandidateCreatesTheLeaseAndHoldsIt) {
  LeaderElector a(fake_, clock_, Settings("a"), {});
  EXPECT_TRUE(a.TryAcquireOrRenew());
  const json lease = Lease();
  EXPECT_EQ(lease["spec"]["holderIdentity"], "a");
  EXPECT_EQ(lease["spec"]["leaseDurationSeconds"], 15);
  EXPECT_EQ(lease["spec"]["leaseTransitions"], 0);
  // MicroTime: RFC 3339 with microseconds, from the injected clock.
  EXPECT_EQ(lease["spec"]["renewTime"], "2023-11-14T22:13:20.000000Z");
  EXPECT_EQ(lease["spec"]["acquireTime"], lease["spec"]["renewTime"]);
  EXPECT_EQ(a.ObservedHolder(), "a");
}

TEST_F(LeaderElectorTest, AnotherCandidateWaitsWhileTheLeaseIsValid) {
  LeaderElector a(fake_, clock_, Settings("a"), {});
  LeaderElector b(fake_, clock_, Settings("b"), {});
  ASSERT_TRUE(a.TryAcquireOrRenew());
  EXPECT_FALSE(b.TryAcquireOrRenew());
  clock_.Advance(seconds(14));
  EXPECT_FALSE(b.TryAcquireOrRenew());
  EXPECT_EQ(b.ObservedHolder(), "a");
  EXPECT_EQ(Lease()["spec"]["holderIdentity"], "a");
}

TEST_F(LeaderElectorTest, RenewalsKeepTheLeaseAndRestartOthersTimers) {
  LeaderElector a(fake_, clock_, Settings("a"), {});
  LeaderElector b(fake_, clock_, Settings("b"), {});
  ASSERT_TRUE(a.TryAcquireOrRenew());
  for (int i = 0; i < 10; ++i) {
    clock_.Advance(seconds(5));
    ASSERT_TRUE(a.TryAcquireOrRenew());
    ASSERT_FALSE(b.TryAcquireOrRenew()) << "round " << i;  // b sees renewTime move each time
  }
  EXPECT_EQ(Lease()["spec"]["leaseTransitions"], 0);
}

TEST_F(LeaderElectorTest, ACandidateTakesOverALeaseNobodyRenewed) {
  LeaderElector a(fake_, clock_, Settings("a"), {});
  LeaderElector b(fake_, clock_, Settings("b"), {});
  ASSERT_TRUE(a.TryAcquireOrRenew());
  ASSERT_FALSE(b.TryAcquireOrRenew());  // b starts its clock on the record it saw
  clock_.Advance(seconds(15));
  EXPECT_TRUE(b.TryAcquireOrRenew());
  const json lease = Lease();
  EXPECT_EQ(lease["spec"]["holderIdentity"], "b");
  EXPECT_EQ(lease["spec"]["leaseTransitions"], 1);
  // The old leader notices on its next try and does not get the lease back.
  EXPECT_FALSE(a.TryAcquireOrRenew());
  EXPECT_EQ(a.ObservedHolder(), "b");
}

TEST_F(LeaderElectorTest, ValidityIsJudgedByLocalObservationNotByRenewTime) {
  // A lease whose renewTime is far in the past (skewed clock of the holder) is still valid for
  // a full lease duration after this candidate first sees it.
  LeaderElector a(fake_, clock_, Settings("a"), {});
  ASSERT_TRUE(a.TryAcquireOrRenew());
  json lease = Lease();
  lease["spec"]["renewTime"] = "2001-01-01T00:00:00.000000Z";
  ASSERT_TRUE(fake_.Update(Leases(), lease, {}).ok());
  LeaderElector b(fake_, clock_, Settings("b"), {});
  EXPECT_FALSE(b.TryAcquireOrRenew());
  clock_.Advance(seconds(10));
  EXPECT_FALSE(b.TryAcquireOrRenew());
  clock_.Advance(seconds(6));
  EXPECT_TRUE(b.TryAcquireOrRenew());
}

TEST_F(LeaderElectorTest, AConflictingWriteMakesTheCandidateLoseThatRound) {
  LeaderElector a(fake_, clock_, Settings("a"), {});
  LeaderElector b(fake_, clock_, Settings("b"), {});
  ASSERT_TRUE(a.TryAcquireOrRenew());
  ASSERT_FALSE(b.TryAcquireOrRenew());
  clock_.Advance(seconds(20));
  // Between b's GET and PUT someone else wrote the lease: the PUT's version is stale (409).
  fake_.FailNext("UPDATE", absl::AbortedError("409 Conflict"));
  EXPECT_FALSE(b.TryAcquireOrRenew());
  EXPECT_EQ(Lease()["spec"]["holderIdentity"], "a");
  EXPECT_TRUE(b.TryAcquireOrRenew());
}

TEST_F(LeaderElectorTest, ReleaseLetsAStandbyTakeOverAtOnce) {
  LeaderElector a(fake_, clock_, Settings("a"), {});
  LeaderElector b(fake_, clock_, Settings("b"), {});
  ASSERT_TRUE(a.TryAcquireOrRenew());
  ASSERT_FALSE(b.TryAcquireOrRenew());
  ASSERT_TRUE(a.Release().ok());
  const json released = Lease();
  EXPECT_EQ(released["spec"]["holderIdentity"], "");
  EXPECT_EQ(released["spec"]["leaseDurationSeconds"], 1);
  EXPECT_TRUE(b.TryAcquireOrRenew());  // no waiting for the old lease duration
  EXPECT_TRUE(a.Release().ok());       // not the holder: nothing to do
  EXPECT_EQ(Lease()["spec"]["holderIdentity"], "b");
}

TEST_F(LeaderElectorTest, ReportsLeaseReadErrorsAsNotAcquired) {
  LeaderElector a(fake_, clock_, Settings("a"), {});
  fake_.FailNext("GET", absl::UnavailableError("apiserver down"));
  EXPECT_FALSE(a.TryAcquireOrRenew());
  EXPECT_TRUE(a.TryAcquireOrRenew());
}

TEST(ValidateLeaderElectionSettingsTest, EnforcesTheDurationOrdering) {
  LeaderElectionSettings s = Settings("a");
  EXPECT_TRUE(ValidateLeaderElectionSettings(s).ok());
  s.renew_deadline = s.lease_duration;
  EXPECT_THAT(std::string(ValidateLeaderElectionSettings(s).message()),
              HasSubstr("lease_duration"));
  s = Settings("a");
  s.retry_period = milliseconds(9000);  // 1.2 x 9 s > 10 s
  EXPECT_THAT(std::string(ValidateLeaderElectionSettings(s).message()),
              HasSubstr("1.2 x retry_period"));
  s = Settings("");
  EXPECT_THAT(std::string(ValidateLeaderElectionSettings(s).message()), HasSubstr("identity"));
}

// The threaded loop with real time: short periods, conditions waited on with deadlines.
class Events {
 public:
  void Push(const std::string& e) {
    absl::MutexLock lock(&mu_);
    events_.push_back(e);
  }
  bool WaitFor(const std::string& e) {
    absl::MutexLock lock(&mu_);
    const auto seen = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return std::find(events_.begin(), events_.end(), e) != events_.end();
    };
    return mu_.AwaitWithTimeout(absl::Condition(&seen), absl::FromChrono(std::chrono::seconds(5)));
  }
  std::vector<std::string> All() {
    absl::MutexLock lock(&mu_);
    return events_;
  }

 private:
  absl::Mutex mu_;
  std::vector<std::string> events_ ABSL_GUARDED_BY(mu_);
};

LeaderElectionSettings FastSettings(const std::string& identity) {
  LeaderElectionSettings s = Settings(identity);
  s.lease_duration = milliseconds(3000);
  s.renew_deadline = milliseconds(2000);
  s.retry_period = milliseconds(20);
  return s;
}

TEST(LeaderElectorLoopTest, LeadsThenReleasesAndHandsOverOnStop) {
  testing::FakeKubeClient fake;
  Events events;
  auto callbacks = [&](const std::string& id) {
    return LeaderCallbacks{[&events, id] { events.Push(id + " started"); },
                           [&events, id] { events.Push(id + " stopped"); }, nullptr};
  };
  LeaderElector a(fake, RealClock::Instance(), FastSettings("a"), callbacks("a"));
  ASSERT_TRUE(a.Start().ok());
  ASSERT_TRUE(events.WaitFor("a started"));
  EXPECT_TRUE(a.IsLeader());
  LeaderElector b(fake, RealClock::Instance(), FastSettings("b"), callbacks("b"));
  ASSERT_TRUE(b.Start().ok());
  EXPECT_EQ(a.Start().code(), absl::StatusCode::kFailedPrecondition);
  const auto before = std::chrono::steady_clock::now();
  a.Stop();  // releases: b must not wait for the 3 s lease duration
  EXPECT_FALSE(a.IsLeader());
  ASSERT_TRUE(events.WaitFor("b started"));
  // Handed over by the release, not by the lease running out (3 s).
  EXPECT_LT(std::chrono::steady_clock::now() - before, milliseconds(3000));
  // a's stopped callback runs after its release, on its own thread: b may start first.
  ASSERT_TRUE(events.WaitFor("a stopped"));
  EXPECT_EQ(events.All().front(), "a started");
  EXPECT_THAT(events.All(), ::testing::UnorderedElementsAre("a started", "a stopped", "b started"));
  b.Stop();
  EXPECT_EQ(events.All().back(), "b stopped");
}

TEST(LeaderElectorLoopTest, StopsLeadingWhenRenewalsFailPastTheDeadline) {
  testing::FakeKubeClient fake;
  Events events;
  LeaderElectionSettings settings = FastSettings("a");
  settings.lease_duration = milliseconds(400);
  settings.renew_deadline = milliseconds(200);
  settings.release_on_stop = false;
  LeaderElector a(fake, RealClock::Instance(), settings,
                  {[&] { events.Push("started"); }, [&] { events.Push("stopped"); }, nullptr});
  ASSERT_TRUE(a.Start().ok());
  ASSERT_TRUE(events.WaitFor("started"));
  for (int i = 0; i < 200; ++i) {
    fake.FailNext("UPDATE", absl::UnavailableError("apiserver down"));
    fake.FailNext("GET", absl::UnavailableError("apiserver down"));
  }
  ASSERT_TRUE(events.WaitFor("stopped"));
  EXPECT_FALSE(a.IsLeader());
  a.Stop();
}

TEST(LeaderElectorLoopTest, KeepsTheLeaseThroughRenewalsTheServerThrottles) {
  testing::FakeKubeClient fake;
  Events events;
  LeaderElectionSettings settings = FastSettings("a");
  settings.retry_period = milliseconds(400);
  settings.renew_deadline = milliseconds(1000);
  settings.lease_duration = milliseconds(2000);
  settings.release_on_stop = false;
  LeaderElector a(fake, RealClock::Instance(), settings,
                  {[&] { events.Push("started"); }, [&] { events.Push("stopped"); }, nullptr});
  ASSERT_TRUE(a.Start().ok());
  ASSERT_TRUE(events.WaitFor("started"));
  // Three rounds throttled (the cached renew, then the read): every full period apart they
  // would end 1.2 s after the last renewal, past the 1 s deadline; a quarter period apart they
  // end 0.6 s after it and the fourth round renews.
  for (int i = 0; i < 3; ++i) {
    fake.FailNext("UPDATE", absl::ResourceExhaustedError("HTTP 429: Too many requests"));
    fake.FailNext("GET", absl::ResourceExhaustedError("HTTP 429: Too many requests"));
  }
  std::this_thread::sleep_for(milliseconds(2500));
  EXPECT_TRUE(a.IsLeader());
  EXPECT_THAT(events.All(), ::testing::ElementsAre("started"));
  a.Stop();
}

TEST(LeaderElectorLoopTest, StartRejectsInvalidSettings) {
  testing::FakeKubeClient fake;
  LeaderElector a(fake, RealClock::Instance(), Settings(""), {});
  EXPECT_EQ(a.Start().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace mmi::kube
