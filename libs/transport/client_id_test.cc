#include "libs/transport/client_id.h"

#include "gtest/gtest.h"

namespace mmi::transport {
namespace {

TEST(RandomHexTest, GivesTheRequestedNumberOfLowercaseHexDigits) {
  const std::string hex = RandomHex(8);
  EXPECT_EQ(hex.size(), 8u);
  EXPECT_EQ(hex.find_first_not_of("0123456789abcdef"), std::string::npos) << hex;
  EXPECT_EQ(RandomHex(0), "");
}

}  // namespace
}  // namespace mmi::transport
