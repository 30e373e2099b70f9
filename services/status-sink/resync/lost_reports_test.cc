#include "services/status-sink/resync/lost_reports.h"

#include <gtest/gtest.h>

#include "libs/common/testing/fake_clock.h"

namespace mmi::status_sink {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;

cloudevents::ResourceStatusHashList List(std::vector<std::string> ids) {
  cloudevents::ResourceStatusHashList list;
  for (auto& id : ids) {
    list.status_hashes.push_back({std::move(id), "hash"});
  }
  return list;
}

std::vector<std::string> Ids(const cloudevents::ResourceStatusHashList& list) {
  std::vector<std::string> ids;
  for (const auto& entry : list.status_hashes) {
    ids.push_back(entry.resource_id);
  }
  return ids;
}

class LostReportsTest : public ::testing::Test {
 protected:
  // Asks for every lost resource; the sink holds hash "held-<id>" of each.
  ResyncLists Round(std::size_t budget = 100) {
    return lost_.TakeRound(budget, clock_.MonotonicNow(),
                           [](const std::string& id) { return "held-" + id; });
  }
  LostReports::Expired Expire() { return lost_.ExpireAsks(clock_.MonotonicNow()); }

  testing::FakeClock clock_;
  LostReports lost_{LostReportsSettings{.max_lost = 3, .answer_timeout = minutes(5), .asks = 2}};
};

TEST_F(LostReportsTest, ALostReportIsRememberedUntilARoundAsksForIt) {
  ASSERT_TRUE(lost_.Remember("r1", "c1"));
  EXPECT_EQ(lost_.lost(), 1U);
  Round();
  EXPECT_EQ(lost_.lost(), 0U);
  EXPECT_EQ(lost_.asked(), 1U);
}

TEST_F(LostReportsTest, BeyondMaxLostNothingIsRememberedSoTheCallerAsksForEverything) {
  ASSERT_TRUE(lost_.Remember("r1", "c1"));
  ASSERT_TRUE(lost_.Remember("r2", "c1"));
  ASSERT_TRUE(lost_.Remember("r3", "c1"));
  EXPECT_FALSE(lost_.Remember("r4", "c1"));
  EXPECT_EQ(lost_.lost(), 3U);
}

TEST_F(LostReportsTest, AReportWithoutResourceIdOrClusterCannotBeRemembered) {
  EXPECT_FALSE(lost_.Remember("", "c1"));
  EXPECT_FALSE(lost_.Remember("r1", ""));
  EXPECT_EQ(lost_.lost(), 0U);
}

TEST_F(LostReportsTest, ARoundListsTheLostResourcesPerClusterWithTheHashTheSinkHolds) {
  ASSERT_TRUE(lost_.Remember("r2", "c2"));
  ASSERT_TRUE(lost_.Remember("r1", "c1"));
  ResyncLists lists = Round();
  ASSERT_EQ(lists.size(), 2U);
  EXPECT_EQ(lists["c1"].status_hashes,
            (std::vector<cloudevents::ResourceStatusHash>{{"r1", "held-r1"}}));
  EXPECT_EQ(lists["c2"].status_hashes,
            (std::vector<cloudevents::ResourceStatusHash>{{"r2", "held-r2"}}));
}

TEST_F(LostReportsTest, ARoundAsksForAtMostItsBudgetInResourceIdOrder) {
  ASSERT_TRUE(lost_.Remember("r3", "c1"));
  ASSERT_TRUE(lost_.Remember("r1", "c1"));
  ASSERT_TRUE(lost_.Remember("r2", "c1"));
  EXPECT_EQ(Ids(Round(2)["c1"]), (std::vector<std::string>{"r1", "r2"}));
  EXPECT_EQ(Ids(Round(2)["c1"]), (std::vector<std::string>{"r3"}));
}

TEST_F(LostReportsTest, AnAnsweredResourceDoesNotExpire) {
  ASSERT_TRUE(lost_.Remember("r1", "c1"));
  Round();
  lost_.AnswerArrived("r1");
  clock_.Advance(minutes(5));
  LostReports::Expired expired = Expire();
  EXPECT_EQ(expired.asked_again, 0U);
  EXPECT_EQ(expired.given_up, 0U);
  EXPECT_EQ(lost_.lost(), 0U);
  EXPECT_EQ(lost_.asked(), 0U);
}

TEST_F(LostReportsTest, AnUnansweredResourceIsLostAgainAfterTheTimeoutThenGivenUp) {
  ASSERT_TRUE(lost_.Remember("r1", "c1"));
  Round();
  clock_.Advance(minutes(5) - seconds(1));
  EXPECT_EQ(Expire().asked_again, 0U);
  clock_.Advance(seconds(1));
  EXPECT_EQ(Expire().asked_again, 1U);
  EXPECT_EQ(lost_.lost(), 1U);

  Round();  // the second ask
  clock_.Advance(minutes(5));
  LostReports::Expired expired = Expire();
  EXPECT_EQ(expired.asked_again, 0U);
  EXPECT_EQ(expired.given_up, 1U);
  EXPECT_EQ(lost_.lost(), 0U);
  EXPECT_EQ(lost_.asked(), 0U);
}

TEST_F(LostReportsTest, AResourceAskedAgainWaitsForItsNewDeadline) {
  ASSERT_TRUE(lost_.Remember("r1", "c1"));
  Round();
  clock_.Advance(minutes(1));
  ASSERT_TRUE(lost_.Unask(List({"r1"})));
  Round();  // asked again: the first deadline no longer applies
  clock_.Advance(minutes(4));
  EXPECT_EQ(Expire().asked_again, 0U);
  clock_.Advance(minutes(1));
  EXPECT_EQ(Expire().asked_again, 1U);
}

TEST_F(LostReportsTest, AnExpiredResourceThatCannotBeRememberedAsksForEverything) {
  ASSERT_TRUE(lost_.Remember("r1", "c1"));
  Round();
  ASSERT_TRUE(lost_.Remember("r2", "c1"));
  ASSERT_TRUE(lost_.Remember("r3", "c1"));
  ASSERT_TRUE(lost_.Remember("r4", "c1"));
  clock_.Advance(minutes(5));
  EXPECT_TRUE(Expire().full_resync);
}

TEST_F(LostReportsTest, AnUnpublishedRequestPutsItsResourcesBackWithTheAsksTheyHad) {
  ASSERT_TRUE(lost_.Remember("r1", "c1", /*asks=*/1));
  ASSERT_TRUE(lost_.Remember("r2", "c1"));
  Round();
  lost_.AnswerArrived("r2");
  ASSERT_TRUE(lost_.Unask(List({"r1", "r2"})));
  EXPECT_EQ(lost_.lost(), 1U);  // r2 was answered meanwhile
  EXPECT_EQ(lost_.asked(), 0U);
  Round();
  clock_.Advance(minutes(5));
  EXPECT_EQ(Expire().given_up, 1U);  // its second ask
}

TEST_F(LostReportsTest, ARecoveredResourceIsNoLongerLost) {
  ASSERT_TRUE(lost_.Remember("r1", "c1"));
  lost_.Recovered("r1");
  EXPECT_EQ(lost_.lost(), 0U);
  EXPECT_TRUE(Round().empty());
}

TEST_F(LostReportsTest, ClearForgetsTheLostAndTheAsked) {
  ASSERT_TRUE(lost_.Remember("r1", "c1"));
  Round();
  ASSERT_TRUE(lost_.Remember("r2", "c1"));
  lost_.Clear();
  EXPECT_EQ(lost_.lost(), 0U);
  EXPECT_EQ(lost_.asked(), 0U);
  clock_.Advance(minutes(5));
  EXPECT_EQ(Expire().asked_again, 0U);
}

TEST_F(LostReportsTest, ARoundGetsHalfTheRoomRoundedUp) {
  ASSERT_TRUE(lost_.Remember("r1", "c1"));
  EXPECT_EQ(lost_.RoundBudget(5, 100), 3U);
  EXPECT_EQ(lost_.RoundBudget(1, 100), 1U);
  EXPECT_EQ(lost_.RoundBudget(0, 100), 0U);
}

TEST_F(LostReportsTest, NoRoundOfCrumbsWhileMuchMoreIsLost) {
  ASSERT_TRUE(lost_.Remember("r1", "c1"));
  ASSERT_TRUE(lost_.Remember("r2", "c1"));
  ASSERT_TRUE(lost_.Remember("r3", "c1"));
  EXPECT_EQ(lost_.RoundBudget(2, 80), 0U);    // 1 of 3 lost, less than 80 / 8
  EXPECT_EQ(lost_.RoundBudget(20, 80), 10U);  // an eighth of the pending set
  EXPECT_EQ(lost_.RoundBudget(6, 80), 3U);    // everything lost
}

TEST_F(LostReportsTest, TheRoomIsRecheckedAtMostOncePerSecond) {
  EXPECT_TRUE(lost_.MayRecheckRoom(clock_.MonotonicNow()));
  EXPECT_FALSE(lost_.MayRecheckRoom(clock_.MonotonicNow()));
  clock_.Advance(seconds(1));
  EXPECT_TRUE(lost_.MayRecheckRoom(clock_.MonotonicNow()));
}

TEST(ChunkResyncListsTest, SplitsEachClustersListIntoChunksInOrder) {
  ResyncLists lists{{"c1", List({"a", "b", "c"})}, {"c2", List({"d"})}};
  std::vector<ResyncChunk> chunks = ChunkResyncLists(lists, 2);
  ASSERT_EQ(chunks.size(), 3U);
  EXPECT_EQ(chunks[0].cluster, "c1");
  EXPECT_EQ(Ids(chunks[0].list), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(chunks[1].cluster, "c1");
  EXPECT_EQ(Ids(chunks[1].list), (std::vector<std::string>{"c"}));
  EXPECT_EQ(chunks[2].cluster, "c2");
  EXPECT_EQ(Ids(chunks[2].list), (std::vector<std::string>{"d"}));
}

TEST(ChunkResyncListsTest, AnEmptyListGivesNoRequest) {
  EXPECT_TRUE(ChunkResyncLists(ResyncLists{{"c1", {}}}, 2).empty());
}

}  // namespace
}  // namespace mmi::status_sink
