#include "libs/kube/label_selector.h"

#include <gtest/gtest.h>

namespace mmi::kube {
namespace {

using nlohmann::json;

LabelSelector Parse(const char* text) {
  auto selector = LabelSelector::FromJson(json::parse(text));
  EXPECT_TRUE(selector.ok()) << selector.status();
  return selector.ok() ? *selector : LabelSelector();
}

TEST(LabelSelectorTest, MatchLabelsNeedsEveryPair) {
  const LabelSelector s = Parse(R"({"matchLabels": {"a": "1", "b": "2"}})");
  EXPECT_TRUE(s.Matches({{"a", "1"}, {"b", "2"}, {"c", "3"}}));
  EXPECT_FALSE(s.Matches({{"a", "1"}}));
  EXPECT_FALSE(s.Matches({{"a", "1"}, {"b", "3"}}));
}

TEST(LabelSelectorTest, ExpressionsFollowTheirOperators) {
  const LabelSelector s = Parse(R"({"matchExpressions": [
      {"key": "tier", "operator": "In", "values": ["edge", "core"]},
      {"key": "env", "operator": "NotIn", "values": ["prod"]},
      {"key": "owner", "operator": "Exists"},
      {"key": "legacy", "operator": "DoesNotExist"}]})");
  EXPECT_TRUE(s.Matches({{"tier", "edge"}, {"owner", "x"}}));
  EXPECT_TRUE(s.Matches({{"tier", "core"}, {"env", "dev"}, {"owner", "x"}}));
  EXPECT_FALSE(s.Matches({{"tier", "other"}, {"owner", "x"}}));
  EXPECT_FALSE(s.Matches({{"tier", "edge"}, {"env", "prod"}, {"owner", "x"}}));
  EXPECT_FALSE(s.Matches({{"tier", "edge"}}));
  EXPECT_FALSE(s.Matches({{"tier", "edge"}, {"owner", "x"}, {"legacy", ""}}));
}

TEST(LabelSelectorTest, AnEmptyOrNullSelectorMatchesEverything) {
  EXPECT_TRUE(Parse("{}").Matches({{"a", "1"}}));
  EXPECT_TRUE(Parse("null").Matches({}));
  EXPECT_TRUE(Parse("null").empty());
}

TEST(LabelSelectorTest, MalformedSelectorsAreRefusedWithTheMemberNamed) {
  for (const char* bad : {R"([])", R"({"matchLabels": []})", R"({"matchLabels": {"a": 1}})",
                          R"({"matchExpressions": [{"key": "a", "operator": "Near"}]})",
                          R"({"matchExpressions": [{"key": "a", "operator": "In"}]})",
                          R"({"matchExpressions": [{"key": "a", "operator": "Exists",
                                                    "values": ["x"]}]})",
                          R"({"matchExpressions": [{"operator": "Exists"}]})"}) {
    auto s = LabelSelector::FromJson(json::parse(bad));
    EXPECT_FALSE(s.ok()) << bad;
    EXPECT_NE(std::string(s.status().message()).find("label selector"), std::string::npos);
  }
}

TEST(LabelSelectorTest, LabelsOfReadsStringLabelsOnly) {
  const auto labels = LabelsOf(json::parse(R"({"metadata": {"labels": {"a": "1", "b": 2}}})"));
  EXPECT_EQ(labels, (std::map<std::string, std::string>{{"a", "1"}}));
  EXPECT_TRUE(LabelsOf(json::parse(R"({"metadata": {}})")).empty());
}

}  // namespace
}  // namespace mmi::kube
