#include "services/status-sink/decoding/internal/json_tree.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <optional>
#include <string>
#include <vector>

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

// What AppendDump writes for `text` (parsed as Parse() would), or nullopt when it refuses.
std::optional<std::string> Dumped(JsonTreeParser& parser, const std::string& text, int max_depth) {
  simdjson::dom::element root;
  if (!parser.Index(text, root)) {
    return std::nullopt;
  }
  std::string out = "prefix:";  // appended to, never replaced
  if (!AppendDump(root, max_depth, out)) {
    return std::nullopt;
  }
  EXPECT_EQ(out.substr(0, 7), "prefix:");
  return out.substr(7);
}

TEST(JsonTreeParserTest, AppendDumpWritesNlohmannsDumpOfTheTree) {
  JsonTreeParser parser;
  for (const std::string text :
       {R"({"b":1,"a":[1,-2,2.5,"x",true,false,null,{}],"c":{"z":18446744073709551615,"y":-9}})",
        R"({"B":1,"b":2,"a":3,"\u00e9":4,"aa":5,"":6})", R"({"a":1,"a":{"b":2},"c":3})",
        R"({"k":1,"k":2,"k":3})",
        R"({"s":"q\" b\\ s\/ t\t n\n r\r f\f b\b c\u0001\u001f d\u007f"})",
        R"({"s":"\u00e9 \u20ac \u2028 \u00ff"})", R"([0.1,1e2,1.0,-1.5e-7,123456789.125,1e300])",
        R"([])", R"({})", R"("s")", R"(7)", R"([[{"b":[],"a":{}}]])",
        R"({"m":1,"l":2,"k":3,"j":4,"i":5,"h":6,"g":7,"f":8,"e":9,"d":10,"c":11,"b":12,"a":13,)"
        R"("z":1,"y":2,"x":3,"w":4,"v":5,"u":6,"t":7,"s":8,"r":9,"q":10,"p":11,"o":12,"n":13,)"
        R"("A":1,"B":2,"C":3,"D":4,"E":5,"F":6,"G":7,"H":8,"a":0})",
        R"({"resources":[{"health":{"status":"Healthy","message":"m"},"kind":"D"}]})"}) {
    SCOPED_TRACE(text);
    const auto dumped = Dumped(parser, text, 100);
    ASSERT_TRUE(dumped.has_value());
    auto tree = parser.Parse(text, 100);
    ASSERT_TRUE(tree.has_value());
    EXPECT_EQ(*dumped, tree->dump(-1, ' ', false, json::error_handler_t::replace));
    EXPECT_EQ(*dumped, json::parse(text).dump());
  }
}

TEST(JsonTreeParserTest, AppendDumpStringEscapesAsNlohmannAtEveryOffset) {
  // Eight bytes are scanned at a time: every offset within and after a word, every byte that
  // is escaped and its neighbours that are not.
  // (Bytes of 0x80 and above come in valid UTF-8 only, as simdjson hands strings out.)
  const std::vector<std::string> specials = {"\"",   "\\",       "\n",       "\t",       "\b", "\f",
                                             "\r",   {'\0'},     "\x01",     "\x1f",     " ",  "!",
                                             "\x7f", "\xc3\xa9", "\xc2\xa2", "\xdc\x90", "/"};
  for (const std::string& special : specials) {
    for (std::size_t length = 0; length <= 24; ++length) {
      for (std::size_t at = 0; at <= length; ++at) {
        std::string text(length, 'a');
        text.insert(at, special);
        text += special;  // and one at the end
        std::string out = "<";
        AppendDumpString(text, out);
        EXPECT_EQ(out, "<" + json(text).dump()) << "length " << length << " at " << at;
      }
    }
  }
}

TEST(JsonTreeParserTest, AppendDumpRefusesWhatBuildTreeRefuses) {
  JsonTreeParser parser;
  EXPECT_FALSE(Dumped(parser, R"({"n":-0.0})", 100).has_value());
  EXPECT_FALSE(Dumped(parser, R"({"n":[1,-0.0]})", 100).has_value());
  EXPECT_FALSE(Dumped(parser, R"({"n":-0.0,"n":1})", 100).has_value());  // even overwritten
  EXPECT_TRUE(Dumped(parser, "[[[]]]", 3).has_value());
  EXPECT_FALSE(Dumped(parser, "[[[]]]", 2).has_value());
  EXPECT_FALSE(Dumped(parser, R"({"a":[[1]],"a":1})", 2).has_value());
}

TEST(JsonTreeParserTest, AppendDumpLeavesOutWhatSkipNames) {
  JsonTreeParser parser;
  simdjson::dom::element root;
  // "[]" is also a key here: array items are told apart from it by the step, not its text.
  ASSERT_TRUE(parser.Index(R"({"t":1,"r":[{"h":{"m":"x","s":"ok"}},{"h":[{"m":1}]}],)"
                           R"("o":{"m":2,"t":3},"[]":{"h":{"m":3}}})",
                           root));
  std::vector<std::string> seen;
  std::string out;
  ASSERT_TRUE(AppendDump(
      root, 100,
      [&](absl::Span<const DumpPathStep> path, std::string_view key) {
        std::string where;
        for (const auto& step : path) {
          where += step.array_items ? "*/" : "<" + std::string(step.key) + ">/";
        }
        seen.push_back(where + std::string(key));
        return (path.empty() && key == "t") || (path.size() == 3 && path[1].array_items &&
                                                path[2] == DumpPathStep{.key = "h"} && key == "m");
      },
      out));
  EXPECT_EQ(out,
            R"({"[]":{"h":{"m":3}},"o":{"m":2,"t":3},"r":[{"h":{"s":"ok"}},{"h":[{"m":1}]}]})");
  EXPECT_EQ(seen, (std::vector<std::string>{"[]", "<[]>/h", "<[]>/<h>/m", "o", "<o>/m", "<o>/t",
                                            "r", "<r>/*/h", "<r>/*/<h>/m", "<r>/*/<h>/s", "<r>/*/h",
                                            "<r>/*/<h>/*/m", "t"}));
}

// The plain-text rule written the obvious way: no byte below 0x20, no "\\u" followed by d/D
// and 8-9, a-f or A-F.
bool PlainByDefinition(std::string_view text) {
  for (const char c : text) {
    if (static_cast<unsigned char>(c) < 0x20) {
      return false;
    }
  }
  for (std::size_t pos = text.find("\\u"); pos != std::string_view::npos;
       pos = text.find("\\u", pos + 2)) {
    if (pos + 3 < text.size() && (text[pos + 2] == 'd' || text[pos + 2] == 'D') &&
        std::string_view("89abcdefABCDEF").find(text[pos + 3]) != std::string_view::npos) {
      return false;
    }
  }
  return true;
}

TEST(JsonTreeParserTest, PlainTextMatchesItsDefinitionOnEveryShortString) {
  // Every string of up to three bytes over the bytes the rule looks at, some around them and
  // some of 0x80 and above (a signed comparison would take those for control bytes), and of four
  // over the rule's own bytes, at offsets inside and across the 16-byte blocks the check reads
  // and in its byte tail.
  const auto all = [](const std::string& alphabet, int max_length) {
    std::vector<std::string> out;
    std::vector<std::string> texts = {""};
    for (int length = 1; length <= max_length; ++length) {
      std::vector<std::string> longer;
      for (const auto& text : texts) {
        for (const char c : alphabet) {
          longer.push_back(text + c);
        }
      }
      texts = std::move(longer);
      out.insert(out.end(), texts.begin(), texts.end());
    }
    return out;
  };
  std::vector<std::string> texts =
      all(std::string("\\udD89afAFgG7@`/x \x80\xe4\xb8\xff") + '\x1f', 3);
  const auto rule = all("\\udD8aF\x80", 4);
  texts.insert(texts.end(), rule.begin(), rule.end());
  int checked = 0;
  for (const auto& text : texts) {
    for (const std::size_t before : {0, 1, 13, 15, 16, 30}) {
      const std::string padded = std::string(before, 'p') + text + std::string(20, 's');
      ASSERT_EQ(IsPlainJsonText(padded), PlainByDefinition(padded)) << padded;
      const std::string tail = std::string(before, 'p') + text;
      ASSERT_EQ(IsPlainJsonText(tail), PlainByDefinition(tail)) << tail;
      ++checked;
    }
  }
  EXPECT_GT(checked, 100'000);
}

TEST(JsonTreeParserTest, PlainTextHasNoControlBytesNorSurrogateEscapes) {
  EXPECT_TRUE(IsPlainJsonText(R"({"a":"\u003c\n"})"));
  EXPECT_FALSE(IsPlainJsonText("{\"a\":1}\n"));
  EXPECT_FALSE(IsPlainJsonText(R"({"a":"\uDBFF"})"));
  EXPECT_FALSE(IsPlainJsonText(std::string("{\"a\":\"\0\"}", 9)));
}

}  // namespace
}  // namespace mmi::status_sink::internal
