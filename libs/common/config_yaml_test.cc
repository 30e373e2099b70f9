#include "libs/common/config_yaml.h"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <string>

namespace mmi::config {
namespace {

using std::chrono::milliseconds;

struct Sample {
  std::string name = "default";
  int count = 1;
  double rate = 0.5;
  bool enabled = false;
  milliseconds timeout{100};
  std::chrono::seconds keep_alive{60};
  std::map<std::string, std::string> extra;
};

absl::Status Read(const std::string& text, Sample& s) {
  YamlReader reader(text);
  YamlSection root = reader.Root();
  root.Scalar("name", s.name);
  YamlSection inner = root.Section("inner");
  inner.Scalar("count", s.count);
  inner.Scalar("rate", s.rate);
  inner.Scalar("enabled", s.enabled);
  inner.Duration("timeout", s.timeout);
  inner.Duration("keepAlive", s.keep_alive);
  inner.StringMap("extra", s.extra);
  return reader.Finish();
}

TEST(YamlReaderTest, ReadsTypedValuesAndKeepsDefaultsForAbsentKeys) {
  Sample s;
  const absl::Status st = Read(R"(
name: x
inner: {count: 3, timeout: 2s, keepAlive: 90s, enabled: null, extra: {linger.ms: "5", a: b}}
)",
                               s);
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_EQ(s.name, "x");
  EXPECT_EQ(s.count, 3);
  EXPECT_EQ(s.rate, 0.5);
  EXPECT_FALSE(s.enabled);
  EXPECT_EQ(s.timeout, milliseconds(2'000));
  EXPECT_EQ(s.keep_alive, std::chrono::seconds(90));
  EXPECT_EQ(s.extra.at("linger.ms"), "5");
  EXPECT_EQ(s.extra.at("a"), "b");
}

TEST(YamlReaderTest, ReportsEveryBadValueByItsFullPath) {
  Sample s;
  const absl::Status st = Read("name: [a]\ninner: {count: many, rate: fast, timeout: soon}\n", s);
  ASSERT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  const std::string msg(st.message());
  EXPECT_NE(msg.find("name: expected a string, got '<non-scalar>'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("inner.count: expected a integer, got 'many'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("inner.rate: expected a number, got 'fast'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("inner.timeout: invalid duration 'soon'"), std::string::npos) << msg;
  EXPECT_EQ(s.count, 1) << "a bad value keeps the default";
}

TEST(YamlReaderTest, RejectsUnknownKeysNamingTheirFullPath) {
  Sample s;
  const absl::Status st = Read("nmae: x\ninner: {count: 2, cuont: 3, extra: {any.key: v}}\n", s);
  ASSERT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  const std::string msg(st.message());
  EXPECT_NE(msg.find("nmae: unknown key (expected one of: inner, name)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("inner.cuont: unknown key"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("any.key"), std::string::npos) << "free-form maps take any key: " << msg;
  EXPECT_EQ(s.count, 2);
}

TEST(YamlReaderTest, RejectsSyntaxErrorsAndNonMappings) {
  Sample s;
  EXPECT_NE(Read("a: [", s).message().find("not valid YAML"), std::string::npos);
  EXPECT_NE(Read("- a\n- b\n", s).message().find("top level must be a mapping"), std::string::npos);
  const absl::Status st = Read("inner: 5\n", s);
  EXPECT_NE(st.message().find("inner: expected a mapping"), std::string::npos) << st;
  EXPECT_TRUE(Read("", s).ok());
}

TEST(YamlReaderTest, HasTellsPresentFromAbsentOrNull) {
  YamlReader reader("a: 1\nb: null\n");
  YamlSection root = reader.Root();
  EXPECT_TRUE(root.Has("a"));
  EXPECT_FALSE(root.Has("b"));
  EXPECT_FALSE(root.Has("c"));
  root.Error("a", "must be even");
  EXPECT_EQ(reader.Finish().message(), "a: must be even");
}

}  // namespace
}  // namespace mmi::config
