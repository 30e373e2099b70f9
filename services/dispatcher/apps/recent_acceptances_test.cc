#include "services/dispatcher/apps/recent_acceptances.h"

#include <chrono>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace mmi::dispatcher {
namespace {

using std::chrono::milliseconds;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Pair;

const auto kT0 = std::chrono::steady_clock::time_point(std::chrono::hours(1));

TEST(RecentAcceptancesTest, GivesEachResourceOnceByClusterAndForgetsThem) {
  RecentAcceptances recent(milliseconds(10'000), 100);
  recent.Note("cluster1", "a", kT0);
  recent.Note("cluster2", "b", kT0 + milliseconds(1));
  recent.Note("cluster1", "a", kT0 + milliseconds(2));
  recent.Note("cluster1", "c", kT0 + milliseconds(3));

  EXPECT_THAT(recent.Take(), ElementsAre(Pair("cluster1", ElementsAre("a", "c")),
                                         Pair("cluster2", ElementsAre("b"))));
  EXPECT_THAT(recent.Take(), IsEmpty());
}

TEST(RecentAcceptancesTest, KeepsOnlyTheWindowBeforeTheNewestAcceptance) {
  RecentAcceptances recent(milliseconds(10'000), 100);
  recent.Note("cluster1", "old", kT0);
  recent.Note("cluster1", "kept", kT0 + milliseconds(5'000));
  recent.Note("cluster1", "newest", kT0 + milliseconds(10'001));

  EXPECT_THAT(recent.Take(), ElementsAre(Pair("cluster1", ElementsAre("kept", "newest"))));
}

TEST(RecentAcceptancesTest, KeepsWhatWasAcceptedBeforeAQuietSpellHoweverLongItLasts) {
  // No acceptance while the broker is down: nothing ages out by the clock alone.
  RecentAcceptances recent(milliseconds(10'000), 100);
  recent.Note("cluster1", "before-the-loss", kT0);

  EXPECT_THAT(recent.Take(), ElementsAre(Pair("cluster1", ElementsAre("before-the-loss"))));
}

TEST(RecentAcceptancesTest, DropsTheOldestBeyondItsCapacity) {
  RecentAcceptances recent(milliseconds(10'000), 2);
  recent.Note("cluster1", "a", kT0);
  recent.Note("cluster1", "b", kT0);
  recent.Note("cluster1", "c", kT0);

  EXPECT_EQ(recent.size(), 2u);
  EXPECT_THAT(recent.Take(), ElementsAre(Pair("cluster1", ElementsAre("b", "c"))));
}

TEST(RecentAcceptancesTest, KeepsNothingWithoutCapacity) {
  RecentAcceptances recent(milliseconds(10'000), 0);
  recent.Note("cluster1", "a", kT0);

  EXPECT_THAT(recent.Take(), IsEmpty());
}

}  // namespace
}  // namespace mmi::dispatcher
