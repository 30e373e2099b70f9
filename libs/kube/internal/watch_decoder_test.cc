#include "libs/kube/internal/watch_decoder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace mmi::kube::internal {
namespace {

using ::testing::HasSubstr;

constexpr std::string_view kStream =
    R"({"type":"ADDED","object":{"kind":"Application","metadata":{"name":"a","resourceVersion":"11"}}})"
    "\n"
    R"({"type":"BOOKMARK","object":{"kind":"Application","metadata":{"resourceVersion":"12"}}})"
    "\n"
    R"({"type":"MODIFIED","object":{"metadata":{"name":"a","resourceVersion":"13"},"spec":{"x":"line\nbreak"}}})"
    "\n"
    R"({"type":"DELETED","object":{"metadata":{"name":"a","resourceVersion":"14"}}})"
    "\n";

struct Collected {
  std::vector<WatchEvent> events;
  WatchHandler Handler() {
    return [this](WatchEvent&& e) {
      events.push_back(std::move(e));
      return true;
    };
  }
};

TEST(WatchDecoderTest, DecodesEveryEventWhateverTheChunkBoundaries) {
  // Every split point of the stream into two chunks, plus byte-by-byte.
  for (size_t split = 0; split <= kStream.size(); ++split) {
    WatchDecoder decoder;
    Collected out;
    ASSERT_TRUE(*decoder.Feed(std::string_view(kStream).substr(0, split), out.Handler()));
    ASSERT_TRUE(*decoder.Feed(std::string_view(kStream).substr(split), out.Handler()));
    ASSERT_EQ(out.events.size(), 4u) << "split at " << split;
    EXPECT_EQ(out.events[0].type, WatchEventType::kAdded);
    EXPECT_EQ(out.events[1].type, WatchEventType::kBookmark);
    EXPECT_EQ(out.events[2].type, WatchEventType::kModified);
    EXPECT_EQ(out.events[2].object["spec"]["x"], "line\nbreak");
    EXPECT_EQ(out.events[3].type, WatchEventType::kDeleted);
    EXPECT_EQ(out.events[3].object["metadata"]["resourceVersion"], "14");
    EXPECT_FALSE(decoder.HasPartialEvent());
  }
  WatchDecoder decoder;
  Collected out;
  for (const char c : kStream) {
    ASSERT_TRUE(*decoder.Feed(std::string_view(&c, 1), out.Handler()));
  }
  EXPECT_EQ(out.events.size(), 4u);
}

TEST(WatchDecoderTest, AcceptsCrLfAndBlankLines) {
  WatchDecoder decoder;
  Collected out;
  ASSERT_TRUE(*decoder.Feed("\r\n{\"type\":\"ADDED\",\"object\":{}}\r\n\n", out.Handler()));
  ASSERT_EQ(out.events.size(), 1u);
}

TEST(WatchDecoderTest, DecodesAnErrorEventCarryingAStatus) {
  WatchDecoder decoder;
  Collected out;
  ASSERT_TRUE(
      *decoder.Feed(R"({"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired"}})"
                    "\n",
                    out.Handler()));
  ASSERT_EQ(out.events.size(), 1u);
  EXPECT_EQ(out.events[0].type, WatchEventType::kError);
  EXPECT_EQ(out.events[0].object["code"], 410);
}

TEST(WatchDecoderTest, StopsWhenTheHandlerSaysSo) {
  WatchDecoder decoder;
  int seen = 0;
  const auto result = decoder.Feed(kStream, [&](WatchEvent&&) { return ++seen < 2; });
  ASSERT_TRUE(result.ok());
  EXPECT_FALSE(*result);
  EXPECT_EQ(seen, 2);
  EXPECT_FALSE(*decoder.Feed(kStream, [&](WatchEvent&&) { return ++seen > 0; }));
  EXPECT_EQ(seen, 2);
}

TEST(WatchDecoderTest, RejectsMalformedEventsWithDataLoss) {
  Collected out;
  for (const std::string bad : {"not json\n", "[1,2]\n", "{\"type\":\"ADDED\"}\n",
                                "{\"type\":\"SURPRISE\",\"object\":{}}\n"}) {
    WatchDecoder decoder;
    const auto result = decoder.Feed(bad, out.Handler());
    EXPECT_EQ(result.status().code(), absl::StatusCode::kDataLoss) << bad;
  }
  EXPECT_TRUE(out.events.empty());
}

TEST(WatchDecoderTest, RefusesAnEventLargerThanTheLimit) {
  WatchDecoder decoder(16);
  Collected out;
  const auto result = decoder.Feed(std::string(32, 'x'), out.Handler());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(result.status().message()), HasSubstr("larger than 16"));
}

TEST(WatchDecoderTest, FinishEmitsALastEventWithoutNewlineAndFlagsATruncatedOne) {
  {
    WatchDecoder decoder;
    Collected out;
    ASSERT_TRUE(*decoder.Feed(R"({"type":"ADDED","object":{}})", out.Handler()));
    EXPECT_TRUE(decoder.HasPartialEvent());
    ASSERT_TRUE(*decoder.Finish(out.Handler()));
    EXPECT_EQ(out.events.size(), 1u);
  }
  {
    WatchDecoder decoder;
    Collected out;
    ASSERT_TRUE(*decoder.Feed(R"({"type":"ADDED","obj)", out.Handler()));
    EXPECT_EQ(decoder.Finish(out.Handler()).status().code(), absl::StatusCode::kDataLoss);
    EXPECT_TRUE(out.events.empty());
  }
}

}  // namespace
}  // namespace mmi::kube::internal
