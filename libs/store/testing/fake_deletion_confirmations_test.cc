#include "libs/store/testing/fake_deletion_confirmations.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace mmi::store::testing {
namespace {

TEST(FakeDeletionConfirmationsTest, DeliversConfirmationsBetweenStartAndStop) {
  FakeDeletionConfirmations fake;
  std::vector<std::string> got;
  EXPECT_FALSE(fake.Confirm("before-start"));
  fake.Start([&got](const std::string& id) { got.push_back(id); });
  EXPECT_TRUE(fake.started());
  EXPECT_TRUE(fake.Confirm("r1"));
  fake.Stop();
  EXPECT_FALSE(fake.Confirm("after-stop"));
  EXPECT_EQ(got, std::vector<std::string>{"r1"});
  EXPECT_FALSE(fake.connected());
  fake.set_connected(true);
  EXPECT_TRUE(fake.connected());
}

}  // namespace
}  // namespace mmi::store::testing
