#include "services/status-sink/internal/json_tree.h"

#include <gtest/gtest.h>

#include <string>

namespace mmi::status_sink::internal {
namespace {

using nlohmann::json;

TEST(JsonTreeParserTest, BuildsTheTreeNlohmannBuilds) {
  JsonTreeParser parser;
  for (const std::string text :
       {R"({"a":[1,-2,2.5,"x",true,null,{}],"b":{"c":18446744073709551615}})", R"([])", R"("s")",
        R"({"a":1,"a":{"b":2}})", R"({"s":"\u003c\n\u0000"})", R"(1e300)", R"({"n":-0})"}) {
    SCOPED_TRACE(text);
    auto tree = parser.Parse(text, 100);
    ASSERT_TRUE(tree.has_value());
    const json expected = json::parse(text);
    EXPECT_EQ(*tree, expected);
    EXPECT_EQ(tree->dump(), expected.dump());
  }
}

TEST(JsonTreeParserTest, KeepsNlohmannsNumberTypes) {
  JsonTreeParser parser;
  auto tree = parser.Parse(R"([0,7,-7,18446744073709551615,1.0])", 100);
  ASSERT_TRUE(tree.has_value());
  EXPECT_TRUE((*tree)[0].is_number_unsigned());
  EXPECT_TRUE((*tree)[1].is_number_unsigned());
  EXPECT_TRUE((*tree)[2].is_number_integer() && !(*tree)[2].is_number_unsigned());
  EXPECT_TRUE((*tree)[3].is_number_unsigned());
  EXPECT_TRUE((*tree)[4].is_number_float());
}

TEST(JsonTreeParserTest, RefusesWhatItCannotVouchFor) {
  JsonTreeParser parser;
  for (const std::string text :
       {"{\"s\":\"a\tb\"}", "{ \"a\": 1 }\n", R"({"s":"\ud800"})", R"({"s":"\ud83d\ude00"})",
        R"({"n":-0.0})", "not json", "", R"({"a":1} x)"}) {
    SCOPED_TRACE(text);
    EXPECT_FALSE(parser.Parse(text, 100).has_value());
  }
}

TEST(JsonTreeParserTest, CountsDepthAsCodecLimitsDoes) {
  JsonTreeParser parser;
  EXPECT_TRUE(parser.Parse("[[[]]]", 3).has_value());
  EXPECT_FALSE(parser.Parse("[[[]]]", 2).has_value());
  EXPECT_TRUE(parser.Parse("1", 0).has_value());
}

TEST(JsonTreeParserTest, PlainTextHasNoControlBytesNorSurrogateEscapes) {
  EXPECT_TRUE(IsPlainJsonText(R"({"a":"\u003c\n"})"));
  EXPECT_FALSE(IsPlainJsonText("{\"a\":1}\n"));
  EXPECT_FALSE(IsPlainJsonText(R"({"a":"\uDBFF"})"));
  EXPECT_FALSE(IsPlainJsonText(std::string("{\"a\":\"\0\"}", 9)));
}

}  // namespace
}  // namespace mmi::status_sink::internal
