#include "services/status-sink/coalescing/coalescer.h"

#include <gtest/gtest.h>

#include "libs/cloudevents/status_hash.h"
#include "libs/common/testing/fake_clock.h"

namespace mmi::status_sink {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::minutes;

constexpr int64_t kSeqBase = int64_t{1'000'000} << 22 | int64_t{1} << 12;

json Status(const std::string& health, const std::string& reconciled_at = "2026-06-01T10:00:00Z") {
  return json{{"health", {{"status", health}}},
              {"sync", {{"status", "Synced"}, {"revision", "abc"}}},
              {"reconciledAt", reconciled_at}};
}

StatusUpdate Update(int seq, const json& status, const std::string& id = "r1") {
  StatusUpdate u;
  u.resource_id = id;
  u.sequence_id = kSeqBase + (int64_t{seq} << 22);
  u.status = status;
  u.status_hash = "hash-" + status.dump();
  return u;
}

// `u` acknowledging dispatch version `version` (the agent's status hash covers it).
StatusUpdate Acking(StatusUpdate u, std::optional<int32_t> version) {
  u.acked_version = version;
  u.status_hash += "-acked-" + (version ? std::to_string(*version) : std::string("none"));
  return u;
}

class CoalescerTest : public ::testing::Test {
 protected:
  Ack MakeAck() {
    return [this] { ++acked_; };
  }
  void ReleaseAll(std::vector<Ack>& acks) {
    for (auto& a : acks) {
      std::move(a)();
    }
    acks.clear();
  }
  OfferResult Offer(StatusUpdate u) {
    auto out = coalescer_.Offer(std::move(u), MakeAck());
    ReleaseAll(out.release);
    return out.result;
  }
  // Takes what is ready and completes it as written.
  int WriteAll() {
    auto ready = coalescer_.TakeReady(100);
    ReleaseAll(ready.release);
    for (auto& t : ready.tasks) {
      coalescer_.Written(t);
      ReleaseAll(t.acks);
    }
    return static_cast<int>(ready.tasks.size());
  }

  testing::FakeClock clock_;
  Coalescer coalescer_{CoalescerSettings{.max_pending = 3, .volatile_interval = minutes(5)},
                       clock_};
  int acked_ = 0;
};

TEST(KeepStatusAsTextTest, KeepsTheTextWithItsMaterialHashAndTheTreeComesBackForTheWrite) {
  json status = Status("Healthy");
  status["resources"] = json::array(
      {{{"kind", "Deployment"},
        {"name", "guestbook-ui"},
        {"health", {{"status", "Progressing"}, {"message", "Waiting for rollout: 1 of 2 é"}}}}});
  status["operationState"] = {{"retryCount", 3}, {"phase", "Succeeded"}};
  for (bool ignore : {false, true}) {
    StatusUpdate u = Update(1, status);
    KeepStatusAsText(u, ignore);
    EXPECT_TRUE(u.status.is_null());
    EXPECT_EQ(u.status_text, status.dump());
    EXPECT_EQ(u.material_hash, MaterialHash(status, ignore));
    EXPECT_EQ(u.material_hash_ignores_health_messages, ignore);
    EXPECT_EQ(MaterialHashOf(u, ignore), MaterialHash(status, ignore));
    // The other setting's hash is computed from the text.
    EXPECT_EQ(MaterialHashOf(u, !ignore), MaterialHash(status, !ignore));
    EXPECT_EQ(StatusTree(u), status);
    EXPECT_TRUE(u.status_text.empty());
  }
  EXPECT_NE(MaterialHash(status, false), MaterialHash(status, true));
  StatusUpdate none;
  KeepStatusAsText(none, false);
  EXPECT_TRUE(none.status_text.empty());
  EXPECT_TRUE(none.material_hash.empty());
}

// The store keeps material hashes across restarts: they must stay the hash of the status's dump
// without its volatile members, however that text is produced.
TEST(MaterialHashTest, IsTheHashOfTheStatusDumpWithoutVolatileMembers) {
  const nlohmann::json status = {
      {"health", {{"status", "Healthy"}}},
      {"reconciledAt", "2026-06-01T10:00:04Z"},
      {"observedAt", "2026-06-01T10:00:04Z"},
      {"controllerNamespace", "argocd"},
      {"resources", nlohmann::json::array({{{"kind", "Deployment"}, {"name", "a\"b\u00e9"}}})},
      {"sync", {{"status", "Synced"}, {"revision", 7}}}};
  nlohmann::json material = status;
  material.erase("reconciledAt");
  material.erase("observedAt");
  material.erase("controllerNamespace");
  EXPECT_EQ(MaterialHash(status, false), cloudevents::Sha256Hex(material.dump()));
  EXPECT_EQ(MaterialHash(nlohmann::json::object(), false), cloudevents::Sha256Hex("{}"));
  EXPECT_EQ(MaterialHash({{"reconciledAt", "x"}}, false), cloudevents::Sha256Hex("{}"));
  EXPECT_EQ(MaterialHash(nlohmann::json(), false), cloudevents::Sha256Hex("null"));
}

TEST_F(CoalescerTest, AFirstReportBecomesOneWrite) {
  EXPECT_EQ(Offer(Update(1, Status("Healthy"))), OfferResult::kQueued);
  EXPECT_EQ(coalescer_.pending(), 1U);
  auto ready = coalescer_.TakeReady(10);
  ASSERT_EQ(ready.tasks.size(), 1U);
  EXPECT_EQ(ready.tasks[0].kind, TaskKind::kWrite);
  EXPECT_FALSE(ready.tasks[0].volatile_only);
  EXPECT_EQ(coalescer_.in_flight(), 1U);
  const auto row = coalescer_.Written(ready.tasks[0]);
  EXPECT_EQ(row.health_status, "Healthy");
  EXPECT_EQ(row.sync_status, "Synced");
  EXPECT_EQ(row.last_sequence_id, kSeqBase + (int64_t{1} << 22));
  EXPECT_EQ(row.volatile_written_at, clock_.Now());
  EXPECT_EQ(coalescer_.in_flight(), 0U);
}

TEST_F(CoalescerTest, TheSameStatusAgainIsADuplicate) {
  Offer(Update(1, Status("Healthy")));
  EXPECT_EQ(WriteAll(), 1);
  EXPECT_EQ(Offer(Update(2, Status("Healthy"))), OfferResult::kDuplicate);
  EXPECT_EQ(WriteAll(), 0);
  EXPECT_EQ(acked_, 2);
}

TEST_F(CoalescerTest, AnOlderSequenceIdIsDropped) {
  Offer(Update(5, Status("Healthy")));
  EXPECT_EQ(Offer(Update(4, Status("Degraded"))), OfferResult::kStale);
  EXPECT_EQ(Offer(Update(5, Status("Degraded"))), OfferResult::kStale);
  auto ready = coalescer_.TakeReady(10);
  ASSERT_EQ(ready.tasks.size(), 1U);
  EXPECT_EQ(ready.tasks[0].update.status["health"]["status"], "Healthy");
}

TEST_F(CoalescerTest, TheLatestPendingReportWinsAndCarriesTheEarlierAcks) {
  Offer(Update(1, Status("Progressing")));
  EXPECT_EQ(Offer(Update(2, Status("Healthy"))), OfferResult::kCoalesced);
  auto ready = coalescer_.TakeReady(10);
  ASSERT_EQ(ready.tasks.size(), 1U);
  EXPECT_EQ(ready.tasks[0].update.status["health"]["status"], "Healthy");
  EXPECT_EQ(ready.tasks[0].acks.size(), 2U);
  EXPECT_EQ(acked_, 0);
}

TEST_F(CoalescerTest, ReconciledAtAloneIsWrittenAtMostOncePerInterval) {
  Offer(Update(1, Status("Healthy", "2026-06-01T10:00:00Z")));
  EXPECT_EQ(WriteAll(), 1);
  clock_.Advance(minutes(3));
  EXPECT_EQ(Offer(Update(2, Status("Healthy", "2026-06-01T10:03:00Z"))), OfferResult::kUnchanged);
  EXPECT_EQ(WriteAll(), 0);
  clock_.Advance(minutes(3));
  EXPECT_EQ(Offer(Update(3, Status("Healthy", "2026-06-01T10:06:00Z"))), OfferResult::kQueued);
  auto ready = coalescer_.TakeReady(10);
  ASSERT_EQ(ready.tasks.size(), 1U);
  EXPECT_TRUE(ready.tasks[0].volatile_only);
}

TEST_F(CoalescerTest, AMaterialChangeIsWrittenAtOnceEvenRightAfterAWrite) {
  Offer(Update(1, Status("Healthy")));
  EXPECT_EQ(WriteAll(), 1);
  EXPECT_EQ(Offer(Update(2, Status("Degraded", "2026-06-01T10:00:01Z"))), OfferResult::kQueued);
  EXPECT_EQ(WriteAll(), 1);
}

TEST_F(CoalescerTest, AReportRevertingToTheHubStateSupersedesThePendingOne) {
  Offer(Update(1, Status("Healthy")));
  EXPECT_EQ(WriteAll(), 1);
  Offer(Update(2, Status("Degraded")));
  // Back to what the hub shows, only reconciledAt differs: nothing to write.
  EXPECT_EQ(Offer(Update(3, Status("Healthy", "2026-06-01T10:00:09Z"))), OfferResult::kUnchanged);
  EXPECT_EQ(coalescer_.pending(), 0U);
  EXPECT_EQ(WriteAll(), 0);
  EXPECT_EQ(acked_, 3);
}

TEST_F(CoalescerTest, OneWriteInFlightPerResourceAndTheNextFollowsIt) {
  Offer(Update(1, Status("Progressing")));
  auto first = coalescer_.TakeReady(10);
  ASSERT_EQ(first.tasks.size(), 1U);
  Offer(Update(2, Status("Healthy")));
  EXPECT_TRUE(coalescer_.TakeReady(10).tasks.empty());
  coalescer_.Written(first.tasks[0]);
  auto second = coalescer_.TakeReady(10);
  ASSERT_EQ(second.tasks.size(), 1U);
  EXPECT_EQ(second.tasks[0].update.status["health"]["status"], "Healthy");
}

TEST_F(CoalescerTest, AReportEqualToTheWriteInFlightIsNotWrittenAgain) {
  Offer(Update(1, Status("Progressing")));
  auto first = coalescer_.TakeReady(10);
  EXPECT_EQ(Offer(Update(2, Status("Progressing", "2026-06-01T10:00:05Z"))),
            OfferResult::kQueued);  // volatile due: never written yet
  coalescer_.Written(first.tasks[0]);
  auto next = coalescer_.TakeReady(10);
  EXPECT_TRUE(next.tasks.empty());
  EXPECT_EQ(next.unchanged, 1);
}

TEST_F(CoalescerTest, AFailedWriteIsRetriedAfterItsDelay) {
  Offer(Update(1, Status("Healthy")));
  auto ready = coalescer_.TakeReady(10);
  coalescer_.Requeue(std::move(ready.tasks[0]), milliseconds(500));
  EXPECT_TRUE(coalescer_.TakeReady(10).tasks.empty());
  ASSERT_TRUE(coalescer_.NextRetry().has_value());
  clock_.Advance(milliseconds(500));
  auto retried = coalescer_.TakeReady(10);
  ASSERT_EQ(retried.tasks.size(), 1U);
  EXPECT_EQ(retried.tasks[0].attempts, 1);
  EXPECT_EQ(retried.tasks[0].acks.size(), 1U);
}

TEST_F(CoalescerTest, PendingResourcesAreBounded) {
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(Offer(Update(1, Status("Healthy"), "r" + std::to_string(i))), OfferResult::kQueued);
  }
  EXPECT_EQ(Offer(Update(1, Status("Healthy"), "r9")), OfferResult::kOverflow);
  // A resource already pending still takes its newer report.
  EXPECT_EQ(Offer(Update(2, Status("Degraded"), "r0")), OfferResult::kCoalesced);
  EXPECT_EQ(acked_, 1);
}

TEST_F(CoalescerTest, MaterialWritesAreHandedOutBeforeVolatileOnlyOnes) {
  for (const char* id : {"r0", "r1"}) {
    Offer(Update(1, Status("Healthy"), id));
  }
  EXPECT_EQ(WriteAll(), 2);
  clock_.Advance(minutes(6));
  // r0: a refresh (reconciledAt only, due); r1: a real change, reported later.
  EXPECT_EQ(Offer(Update(2, Status("Healthy", "2026-06-01T10:06:00Z"), "r0")),
            OfferResult::kQueued);
  EXPECT_EQ(Offer(Update(2, Status("Degraded"), "r1")), OfferResult::kQueued);
  auto first = coalescer_.TakeReady(1);
  ASSERT_EQ(first.tasks.size(), 1U);
  EXPECT_EQ(first.tasks[0].update.resource_id, "r1");
  EXPECT_FALSE(first.tasks[0].volatile_only);
  auto second = coalescer_.TakeReady(1);
  ASSERT_EQ(second.tasks.size(), 1U);
  EXPECT_EQ(second.tasks[0].update.resource_id, "r0");
  EXPECT_TRUE(second.tasks[0].volatile_only);
}

// A cold start larger than the hub's write rate: every Application gets its first status before
// any gets a second one.
TEST_F(CoalescerTest, FirstWritesAreHandedOutBeforeUpdatesOfWrittenResources) {
  Offer(Update(1, Status("Progressing"), "r0"));
  EXPECT_EQ(WriteAll(), 1);
  EXPECT_EQ(Offer(Update(2, Status("Healthy"), "r0")), OfferResult::kQueued);   // an update
  EXPECT_EQ(Offer(Update(1, Status("Healthy"), "r1")), OfferResult::kQueued);   // a first
  EXPECT_EQ(Offer(Update(1, Status("Degraded"), "r2")), OfferResult::kQueued);  // a first
  auto ready = coalescer_.TakeReady(2);
  ASSERT_EQ(ready.tasks.size(), 2U);
  EXPECT_EQ(ready.tasks[0].update.resource_id, "r1");
  EXPECT_EQ(ready.tasks[1].update.resource_id, "r2");
  auto next = coalescer_.TakeReady(2);
  ASSERT_EQ(next.tasks.size(), 1U);
  EXPECT_EQ(next.tasks[0].update.resource_id, "r0");
  // Restored from the store: not a first write any more.
  Coalescer restored(CoalescerSettings{.max_pending = 3, .volatile_interval = minutes(5)}, clock_);
  store::AppliedStatus applied;
  applied.resource_id = "r3";
  applied.status_hash = "hash-old";
  applied.material_hash = "material-old";
  restored.Restore(applied);
  restored.Offer(Update(1, Status("Healthy"), "r3"), MakeAck());
  restored.Offer(Update(1, Status("Healthy"), "r4"), MakeAck());
  auto order = restored.TakeReady(2);
  ASSERT_EQ(order.tasks.size(), 2U);
  EXPECT_EQ(order.tasks[0].update.resource_id, "r4");
  EXPECT_EQ(order.tasks[1].update.resource_id, "r3");
}

TEST_F(CoalescerTest, AVolatileOnlyReportTurnedMaterialMovesAhead) {
  for (const char* id : {"r0", "r1"}) {
    Offer(Update(1, Status("Healthy"), id));
  }
  EXPECT_EQ(WriteAll(), 2);
  clock_.Advance(minutes(6));
  Offer(Update(2, Status("Healthy", "2026-06-01T10:06:00Z"), "r0"));
  Offer(Update(2, Status("Healthy", "2026-06-01T10:06:00Z"), "r1"));
  EXPECT_EQ(Offer(Update(3, Status("Degraded"), "r1")), OfferResult::kCoalesced);
  auto first = coalescer_.TakeReady(1);
  ASSERT_EQ(first.tasks.size(), 1U);
  EXPECT_EQ(first.tasks[0].update.resource_id, "r1");
  // The volatile-only report was acknowledged when admitted; the material one waits for its
  // write.
  EXPECT_EQ(first.tasks[0].acks.size(), 1U);
  coalescer_.Written(first.tasks[0]);
  // r1's stale entry in the volatile queue is skipped; r0 follows, once.
  auto rest = coalescer_.TakeReady(10);
  ASSERT_EQ(rest.tasks.size(), 1U);
  EXPECT_EQ(rest.tasks[0].update.resource_id, "r0");
}

TEST_F(CoalescerTest, AFullQueueShedsTheOldestVolatileOnlyWriteForANewReport) {
  for (const char* id : {"r0", "r1", "r2"}) {
    Offer(Update(1, Status("Healthy"), id));
  }
  EXPECT_EQ(WriteAll(), 3);
  clock_.Advance(minutes(6));
  for (const char* id : {"r0", "r1"}) {
    EXPECT_EQ(Offer(Update(2, Status("Healthy", "2026-06-01T10:06:00Z"), id)),
              OfferResult::kQueued);
  }
  EXPECT_EQ(Offer(Update(2, Status("Degraded"), "r2")), OfferResult::kQueued);
  EXPECT_EQ(coalescer_.pending(), 3U);
  EXPECT_EQ(coalescer_.Sheddable(), 2U) << "r0 and r1 (volatile-only), not r2 (material)";
  const int acked_before = acked_;
  auto out = coalescer_.Offer(Update(1, Status("Healthy"), "r9"), MakeAck());
  EXPECT_EQ(out.result, OfferResult::kQueued);
  EXPECT_EQ(out.shed, 1);
  ReleaseAll(out.release);
  EXPECT_EQ(acked_, acked_before);  // r0's report was acknowledged on admission
  EXPECT_EQ(coalescer_.pending(), 3U);
  EXPECT_EQ(Offer(Update(1, Status("Healthy"), "r8")), OfferResult::kQueued);  // sheds r1
  // Nothing volatile-only is left to shed: the next new resource overflows.
  EXPECT_EQ(coalescer_.Sheddable(), 0U);
  EXPECT_EQ(Offer(Update(1, Status("Healthy"), "r7")), OfferResult::kOverflow);
  auto ready = coalescer_.TakeReady(10);
  std::vector<std::string> ids;
  for (const auto& t : ready.tasks) {
    ids.push_back(t.update.resource_id);
  }
  // First writes (r9, r8) before the update of an Application the hub already shows (r2).
  EXPECT_EQ(ids, (std::vector<std::string>{"r9", "r8", "r2"}));
}

TEST_F(CoalescerTest, AFullQueueShedsNothingForAReportThatNeedsNoWrite) {
  for (const char* id : {"r0", "r1", "r2"}) {
    Offer(Update(1, Status("Healthy"), id));
  }
  EXPECT_EQ(WriteAll(), 3);
  clock_.Advance(minutes(6));
  for (const char* id : {"r0", "r1"}) {
    Offer(Update(2, Status("Healthy", "2026-06-01T10:06:00Z"), id));
  }
  Offer(Update(1, Status("Healthy"), "r9"));  // full now
  auto ready = coalescer_.TakeReady(1);       // r9 (material first)
  ASSERT_EQ(ready.tasks.size(), 1U);
  coalescer_.Written(ready.tasks[0]);
  Offer(Update(1, Status("Healthy"), "r8"));  // full again (r0, r1, r8)
  // r9 again with only reconciledAt changed, right after its write: nothing to write, so
  // nothing is shed for it.
  auto out =
      coalescer_.Offer(Update(2, Status("Healthy", "2026-06-01T10:06:30Z"), "r9"), MakeAck());
  ReleaseAll(out.release);
  EXPECT_EQ(out.result, OfferResult::kUnchanged);
  EXPECT_EQ(out.shed, 0);
  EXPECT_EQ(coalescer_.pending(), 3U);
}

TEST_F(CoalescerTest, RestoredStateSuppressesARewriteAfterRestart) {
  const json status = Status("Healthy");
  store::AppliedStatus applied;
  applied.resource_id = "r1";
  applied.last_sequence_id = kSeqBase + (int64_t{7} << 22);
  applied.status_hash = "hash-" + status.dump();
  applied.material_hash = MaterialHash(status, false);
  applied.volatile_written_at = clock_.Now();
  coalescer_.Restore(applied);
  EXPECT_EQ(Offer(Update(8, status)), OfferResult::kDuplicate);
  EXPECT_EQ(Offer(Update(9, Status("Healthy", "2026-06-01T10:02:00Z"))), OfferResult::kUnchanged);
  EXPECT_EQ(Offer(Update(6, Status("Degraded"))), OfferResult::kStale);
  EXPECT_EQ(coalescer_.LatestHash("r1"),
            "hash-" + Status("Healthy", "2026-06-01T10:02:00Z").dump());
}

TEST_F(CoalescerTest, ADeletionReportBecomesAHandOffTask) {
  StatusUpdate u = Update(1, json());
  u.deleted = true;
  u.status_hash = "deleted";
  EXPECT_EQ(Offer(std::move(u)), OfferResult::kQueued);
  auto ready = coalescer_.TakeReady(10);
  ASSERT_EQ(ready.tasks.size(), 1U);
  EXPECT_EQ(ready.tasks[0].kind, TaskKind::kConfirmDeletion);
  coalescer_.Forget("r1");
  EXPECT_EQ(coalescer_.in_flight(), 0U);
  EXPECT_FALSE(coalescer_.Knows("r1"));
}

TEST(MaterialHashTest, IgnoresVolatileAndStaticFieldsOnly) {
  json a = Status("Healthy");
  json b = a;
  b["reconciledAt"] = "2030-01-01T00:00:00Z";
  b["observedAt"] = "2030-01-01T00:00:00Z";
  b["controllerNamespace"] = "openshift-gitops";
  EXPECT_EQ(MaterialHash(a, false), MaterialHash(b, false));
  b["operationState"] = {{"phase", "Succeeded"}, {"finishedAt", "2030-01-01T00:00:00Z"}};
  EXPECT_NE(MaterialHash(a, false), MaterialHash(b, false));

  json r1 = {{"resources",
              json::array({{{"kind", "Deployment"},
                            {"health", {{"status", "Progressing"}, {"message", "1 of 2"}}}}})}};
  json r2 = r1;
  r2["resources"][0]["health"]["message"] = "2 of 2";
  EXPECT_NE(MaterialHash(r1, false), MaterialHash(r2, false));
  EXPECT_EQ(MaterialHash(r1, true), MaterialHash(r2, true));
}

// End-to-end acknowledgement (coalescer.h): a newer acked_version alone is saved, with no hub
// PATCH; an older or equal one changes nothing.
TEST_F(CoalescerTest, ANewerAcknowledgementAloneIsSavedWithoutAHubWrite) {
  Offer(Acking(Update(1, Status("Healthy")), 1));
  auto first = coalescer_.TakeReady(10);
  ASSERT_EQ(first.tasks.size(), 1U);
  EXPECT_EQ(coalescer_.Written(first.tasks[0]).acked_version, 1);
  ReleaseAll(first.tasks[0].acks);
  const auto written_at = clock_.Now();
  clock_.Advance(minutes(1));

  // A republish of the same content: only the annotation, so only the version, moved.
  EXPECT_EQ(Offer(Acking(Update(2, Status("Healthy")), 2)), OfferResult::kQueued);
  EXPECT_EQ(acked_, 1) << "acknowledged once saved, not when admitted";
  auto ready = coalescer_.TakeReady(10);
  ASSERT_EQ(ready.tasks.size(), 1U);
  EXPECT_EQ(ready.tasks[0].kind, TaskKind::kSaveAcknowledgement);
  EXPECT_FALSE(ready.tasks[0].volatile_only);
  const auto row = coalescer_.Written(ready.tasks[0]);
  EXPECT_EQ(row.acked_version, 2);
  EXPECT_EQ(row.last_sequence_id, kSeqBase + (int64_t{2} << 22));
  EXPECT_EQ(row.health_status, "Healthy");
  EXPECT_EQ(row.volatile_written_at, written_at) << "nothing was written onto the hub";
  EXPECT_EQ(coalescer_.in_flight(), 0U);
}

TEST_F(CoalescerTest, AnOlderOrEqualAcknowledgementChangesNothing) {
  Offer(Acking(Update(1, Status("Healthy")), 5));
  EXPECT_EQ(WriteAll(), 1);
  // Refreshes (reconciledAt moved, within the volatile interval).
  EXPECT_EQ(Offer(Acking(Update(2, Status("Healthy", "2026-06-01T10:00:02Z")), 5)),
            OfferResult::kUnchanged);
  EXPECT_EQ(Offer(Acking(Update(3, Status("Healthy", "2026-06-01T10:00:03Z")), 4)),
            OfferResult::kUnchanged);
  EXPECT_EQ(Offer(Acking(Update(4, Status("Healthy", "2026-06-01T10:00:04Z")), std::nullopt)),
            OfferResult::kUnchanged);
  EXPECT_EQ(WriteAll(), 0);
  // A material change reported with an older version: written, and the saved version stays.
  EXPECT_EQ(Offer(Acking(Update(5, Status("Degraded")), 3)), OfferResult::kQueued);
  auto ready = coalescer_.TakeReady(10);
  ASSERT_EQ(ready.tasks.size(), 1U);
  EXPECT_EQ(ready.tasks[0].kind, TaskKind::kWrite);
  EXPECT_EQ(coalescer_.Written(ready.tasks[0]).acked_version, 5);
}

TEST_F(CoalescerTest, AnAcknowledgementWithAStatusChangeTakesTheWrite) {
  Offer(Acking(Update(1, Status("Progressing")), 1));
  EXPECT_EQ(WriteAll(), 1);
  EXPECT_EQ(Offer(Acking(Update(2, Status("Healthy")), 2)), OfferResult::kQueued);
  auto ready = coalescer_.TakeReady(10);
  ASSERT_EQ(ready.tasks.size(), 1U);
  EXPECT_EQ(ready.tasks[0].kind, TaskKind::kWrite);
  EXPECT_EQ(coalescer_.Written(ready.tasks[0]).acked_version, 2);
}

// With a volatile write due, the acknowledgement rides on it (a PATCH of fresh reconciledAt),
// but is held like a material one: never acknowledged at admission, never shed.
TEST_F(CoalescerTest, AnAcknowledgementWithAVolatileWriteDueIsNeitherAckedEarlyNorShed) {
  for (const char* id : {"r0", "r1", "r2"}) {
    Offer(Acking(Update(1, Status("Healthy"), id), 1));
  }
  EXPECT_EQ(WriteAll(), 3);
  EXPECT_EQ(acked_, 3);
  clock_.Advance(minutes(6));
  EXPECT_EQ(Offer(Acking(Update(2, Status("Healthy", "2026-06-01T10:06:00Z"), "r0"), 2)),
            OfferResult::kQueued);
  EXPECT_EQ(acked_, 3);
  EXPECT_EQ(coalescer_.Sheddable(), 0U);
  auto ready = coalescer_.TakeReady(10);
  ASSERT_EQ(ready.tasks.size(), 1U);
  EXPECT_EQ(ready.tasks[0].kind, TaskKind::kWrite);
  EXPECT_TRUE(ready.tasks[0].volatile_only);
  EXPECT_EQ(coalescer_.Written(ready.tasks[0]).acked_version, 2);
}

TEST_F(CoalescerTest, TheAcknowledgementOfASupersededReportCarriesOver) {
  Offer(Acking(Update(1, Status("Healthy")), 1));
  EXPECT_EQ(WriteAll(), 1);
  Offer(Acking(Update(2, Status("Degraded")), 2));
  // Back to what the hub shows, from an agent node that reports no version: the pending
  // report's version is not lost with it.
  EXPECT_EQ(Offer(Acking(Update(3, Status("Healthy")), std::nullopt)), OfferResult::kCoalesced);
  auto ready = coalescer_.TakeReady(10);
  ASSERT_EQ(ready.tasks.size(), 1U);
  EXPECT_EQ(ready.tasks[0].kind, TaskKind::kSaveAcknowledgement);
  EXPECT_EQ(ready.tasks[0].acks.size(), 2U);
  EXPECT_EQ(coalescer_.Written(ready.tasks[0]).acked_version, 2);
}

TEST_F(CoalescerTest, AFailedWriteKeepsItsAcknowledgementForTheReportThatReplacesIt) {
  Offer(Acking(Update(1, Status("Healthy")), 1));
  EXPECT_EQ(WriteAll(), 1);
  Offer(Acking(Update(2, Status("Degraded")), 2));
  auto failing = coalescer_.TakeReady(10);
  ASSERT_EQ(failing.tasks.size(), 1U);
  Offer(Acking(Update(3, Status("Degraded", "2026-06-01T10:00:07Z")), std::nullopt));
  Offer(Acking(Update(4, Status("Progressing")), std::nullopt));
  coalescer_.Requeue(std::move(failing.tasks[0]), milliseconds(500));
  clock_.Advance(milliseconds(500));
  auto retried = coalescer_.TakeReady(10);
  ASSERT_EQ(retried.tasks.size(), 1U);
  EXPECT_EQ(retried.tasks[0].update.status["health"]["status"], "Progressing");
  EXPECT_EQ(coalescer_.Written(retried.tasks[0]).acked_version, 2);
}

// A report with the acknowledgement alone (a spoke Application no Argo CD reported on).
StatusUpdate AckAlone(int seq, int32_t version, const std::string& id = "r1") {
  StatusUpdate u;
  u.resource_id = id;
  u.sequence_id = kSeqBase + (int64_t{seq} << 22);
  u.status_hash = "ack-alone-" + std::to_string(version);
  u.acked_version = version;
  u.ack_only = true;
  return u;
}

TEST_F(CoalescerTest, AnAcknowledgementAloneIsSavedWithoutTouchingTheStatus) {
  // Nothing on the hub yet: saved alone, its row without sync, health or material.
  EXPECT_EQ(Offer(AckAlone(1, 4)), OfferResult::kQueued);
  EXPECT_EQ(acked_, 0) << "acknowledged once saved";
  auto ready = coalescer_.TakeReady(10);
  ASSERT_EQ(ready.tasks.size(), 1U);
  EXPECT_EQ(ready.tasks[0].kind, TaskKind::kSaveAcknowledgement);
  auto row = coalescer_.Written(ready.tasks[0]);
  ReleaseAll(ready.tasks[0].acks);
  EXPECT_EQ(row.acked_version, 4);
  EXPECT_TRUE(row.acknowledgement_only);
  EXPECT_EQ(row.sync_status, std::nullopt);
  EXPECT_EQ(row.health_status, std::nullopt);
  EXPECT_EQ(row.material_hash, "");
  EXPECT_EQ(row.volatile_written_at, std::nullopt) << "nothing was written onto the hub";
  EXPECT_EQ(acked_, 1);
  // The Application's first status is still a first write: before another's update.
  Offer(Update(1, Status("Healthy"), "r0"));
  EXPECT_EQ(WriteAll(), 1);
  EXPECT_EQ(Offer(Update(2, Status("Degraded"), "r0")), OfferResult::kQueued);
  EXPECT_EQ(Offer(Acking(Update(2, Status("Healthy")), 4)), OfferResult::kQueued);
  ready = coalescer_.TakeReady(1);
  ASSERT_EQ(ready.tasks.size(), 1U);
  EXPECT_EQ(ready.tasks[0].update.resource_id, "r1");
  EXPECT_EQ(ready.tasks[0].kind, TaskKind::kWrite);
  coalescer_.Written(ready.tasks[0]);
  ReleaseAll(ready.tasks[0].acks);
  EXPECT_EQ(WriteAll(), 1);  // r0's update

  // With a status on the hub: the row keeps its status fields (the store keeps sync/health).
  EXPECT_EQ(Offer(AckAlone(3, 5)), OfferResult::kQueued);
  ready = coalescer_.TakeReady(10);
  ASSERT_EQ(ready.tasks.size(), 1U);
  EXPECT_EQ(ready.tasks[0].kind, TaskKind::kSaveAcknowledgement);
  row = coalescer_.Written(ready.tasks[0]);
  ReleaseAll(ready.tasks[0].acks);
  EXPECT_EQ(row.acked_version, 5);
  EXPECT_EQ(row.material_hash, MaterialHash(Status("Healthy"), false));
  EXPECT_EQ(row.last_sequence_id, kSeqBase + (int64_t{2} << 22)) << "the status's report";
  EXPECT_EQ(row.sync_status, std::nullopt);
  EXPECT_EQ(coalescer_.WrittenHealth("r1"), "Healthy");
  // The same report again is a duplicate; the same version with another hash, or an older
  // version: nothing.
  EXPECT_EQ(Offer(AckAlone(4, 5)), OfferResult::kDuplicate);
  StatusUpdate same = AckAlone(5, 5);
  same.status_hash = "ack-alone-5-again";
  EXPECT_EQ(Offer(std::move(same)), OfferResult::kUnchanged);
  EXPECT_EQ(Offer(AckAlone(6, 3)), OfferResult::kUnchanged);
  EXPECT_EQ(WriteAll(), 0);
  EXPECT_EQ(acked_, 8);  // r1's six reports and r0's two
}

TEST_F(CoalescerTest, AnAcknowledgementAloneJoinsTheWaitingWriteInsteadOfReplacingIt) {
  Offer(Acking(Update(1, Status("Progressing")), 1));
  EXPECT_EQ(Offer(AckAlone(2, 2)), OfferResult::kCoalesced);
  auto ready = coalescer_.TakeReady(10);
  ASSERT_EQ(ready.tasks.size(), 1U);
  EXPECT_EQ(ready.tasks[0].kind, TaskKind::kWrite);
  EXPECT_EQ(ready.tasks[0].update.status["health"]["status"], "Progressing");
  EXPECT_EQ(ready.tasks[0].acks.size(), 2U);
  EXPECT_EQ(coalescer_.Written(ready.tasks[0]).acked_version, 2);
  ReleaseAll(ready.tasks[0].acks);

  // A waiting volatile-only write it joins is no longer shed.
  for (const char* id : {"r0", "r2"}) {
    Offer(Acking(Update(1, Status("Healthy"), id), 1));
  }
  EXPECT_EQ(WriteAll(), 2);
  clock_.Advance(minutes(6));
  EXPECT_EQ(Offer(Acking(Update(3, Status("Progressing", "2026-06-01T10:06:00Z")), 2)),
            OfferResult::kQueued);
  EXPECT_EQ(coalescer_.Sheddable(), 1U);
  EXPECT_EQ(Offer(AckAlone(4, 3)), OfferResult::kCoalesced);
  EXPECT_EQ(coalescer_.Sheddable(), 0U);
  // Taken as a volatile write (it changes no material field) and failed: still not shed.
  ready = coalescer_.TakeReady(10);
  ASSERT_EQ(ready.tasks.size(), 1U);
  EXPECT_TRUE(ready.tasks[0].volatile_only);
  coalescer_.Requeue(std::move(ready.tasks[0]), milliseconds(500));
  clock_.Advance(milliseconds(500));
  EXPECT_TRUE(coalescer_.TakeReady(0).tasks.empty());  // back in the volatile queue
  EXPECT_EQ(coalescer_.Sheddable(), 0U);
  ready = coalescer_.TakeReady(10);
  ASSERT_EQ(ready.tasks.size(), 1U);
  EXPECT_EQ(ready.tasks[0].acks.size(), 1U) << "the acknowledgement's ack, not released";
  EXPECT_EQ(coalescer_.Written(ready.tasks[0]).acked_version, 3);
}

TEST_F(CoalescerTest, AnAcknowledgementAloneNeedsASlotAndWaitsForNoDeletion) {
  Offer(Acking(Update(1, Status("Healthy")), 1));
  EXPECT_EQ(WriteAll(), 1);
  for (const char* id : {"r0", "r2", "r3"}) {
    EXPECT_EQ(Offer(Update(1, Status("Healthy"), id)), OfferResult::kQueued);
  }
  EXPECT_EQ(Offer(AckAlone(2, 2)), OfferResult::kOverflow);
  EXPECT_EQ(coalescer_.pending(), 3U);
  EXPECT_EQ(WriteAll(), 3);

  StatusUpdate deleted = Update(3, json(nullptr));
  deleted.deleted = true;
  EXPECT_EQ(Offer(std::move(deleted)), OfferResult::kQueued);
  auto ready = coalescer_.TakeReady(10);
  ASSERT_EQ(ready.tasks.size(), 1U);
  EXPECT_EQ(ready.tasks[0].kind, TaskKind::kConfirmDeletion);
  // A late acknowledgement while the deletion is in flight: nothing that a failed deletion's
  // retry could be merged into.
  EXPECT_EQ(Offer(AckAlone(4, 2)), OfferResult::kUnchanged);
  coalescer_.Requeue(std::move(ready.tasks[0]), milliseconds(1));
  clock_.Advance(milliseconds(1));
  ready = coalescer_.TakeReady(10);
  ASSERT_EQ(ready.tasks.size(), 1U);
  EXPECT_EQ(ready.tasks[0].kind, TaskKind::kConfirmDeletion);
}

TEST_F(CoalescerTest, AStatusReplacesAWaitingAcknowledgementAloneAndKeepsItsVersion) {
  Offer(Acking(Update(1, Status("Healthy")), 1));
  EXPECT_EQ(WriteAll(), 1);
  EXPECT_EQ(Offer(AckAlone(2, 2)), OfferResult::kQueued);
  EXPECT_EQ(Offer(Acking(Update(3, Status("Degraded")), std::nullopt)), OfferResult::kCoalesced);
  auto ready = coalescer_.TakeReady(10);
  ASSERT_EQ(ready.tasks.size(), 1U);
  EXPECT_EQ(ready.tasks[0].kind, TaskKind::kWrite);
  EXPECT_EQ(ready.tasks[0].acks.size(), 2U);
  const auto row = coalescer_.Written(ready.tasks[0]);
  EXPECT_EQ(row.acked_version, 2);
  EXPECT_EQ(row.health_status, "Degraded");
}

TEST_F(CoalescerTest, ARestoredAcknowledgementIsNotSavedAgain) {
  store::AppliedStatus applied;
  applied.resource_id = "r1";
  applied.last_sequence_id = kSeqBase + (int64_t{1} << 22);
  applied.status_hash = "restored";
  applied.material_hash = MaterialHash(Status("Healthy"), false);
  applied.volatile_written_at = clock_.Now();
  applied.acked_version = 4;
  coalescer_.Restore(applied);
  // The agent's answer to the restarted sink's resync: what the store has already.
  EXPECT_EQ(Offer(Acking(Update(2, Status("Healthy", "2026-06-01T10:00:02Z")), 4)),
            OfferResult::kUnchanged);
  EXPECT_EQ(WriteAll(), 0);
  EXPECT_EQ(Offer(Acking(Update(3, Status("Healthy")), 5)), OfferResult::kQueued);
  auto ready = coalescer_.TakeReady(10);
  ASSERT_EQ(ready.tasks.size(), 1U);
  EXPECT_EQ(ready.tasks[0].kind, TaskKind::kSaveAcknowledgement);
  EXPECT_EQ(coalescer_.Written(ready.tasks[0]).acked_version, 5);
}

}  // namespace
}  // namespace mmi::status_sink
