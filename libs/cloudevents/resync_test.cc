#include "libs/cloudevents/resync.h"

#include <string>

#include "gtest/gtest.h"
#include "libs/cloudevents/internal/test_samples.h"
#include "libs/cloudevents/json_format.h"

namespace mmi::cloudevents {
namespace {

TEST(ResyncTest, DecodesTheStatusResyncRequestExample) {
  auto event = DecodeStructuredJson(testing::kStatusResyncRequestJson);
  ASSERT_TRUE(event.ok()) << event.status();
  EXPECT_EQ(*event->ClusterName(), "");
  auto list = DecodeResourceStatusHashList(*event->data);
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->status_hashes.size(), 1U);
  EXPECT_EQ(list->status_hashes[0].resource_id, "278f3a61-efe5-56de-abba-6aedbfcce272");
  EXPECT_EQ(list->status_hashes[0].status_hash,
            "dbf99aec0396d2c106981a0ca97a8915b37bfff4308fd9b8dbcde22b21fa9c9e");
}

TEST(ResyncTest, DecodesTheSpecResyncRequestExample) {
  auto event = DecodeStructuredJson(testing::kSpecResyncRequestJson);
  ASSERT_TRUE(event.ok()) << event.status();
  auto list = DecodeResourceVersionList(*event->data);
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_EQ(list->resource_versions,
            (std::vector<ResourceVersion>{{"278f3a61-efe5-56de-abba-6aedbfcce272", 1}}));
}

TEST(ResyncTest, EncodesWithUpperCaseIdMembers) {
  auto hashes = EncodeResourceStatusHashList({{{"r1", "h1"}}});
  ASSERT_TRUE(hashes.ok());
  EXPECT_EQ(*hashes, R"({"statusHashes":[{"resourceID":"r1","statusHash":"h1"}]})");
  auto versions = EncodeResourceVersionList({{{"r1", 3}}});
  ASSERT_TRUE(versions.ok());
  EXPECT_EQ(*versions, R"({"resourceVersions":[{"resourceID":"r1","resourceVersion":3}]})");
  EXPECT_EQ(*EncodeResourceStatusHashList({}), R"({"statusHashes":[]})");
  EXPECT_EQ(*EncodeResourceVersionList({}), R"({"resourceVersions":[]})");
}

TEST(ResyncTest, RoundTrips) {
  const ResourceStatusHashList hashes{{{"a", "x"}, {"b", "y"}}};
  EXPECT_EQ(*DecodeResourceStatusHashList(*EncodeResourceStatusHashList(hashes)), hashes);
  const ResourceVersionList versions{{{"a", 1}, {"b", 9007199254740993}}};
  EXPECT_EQ(*DecodeResourceVersionList(*EncodeResourceVersionList(versions)), versions);
}

TEST(ResyncTest, EmptyListMeansEverything) {
  auto list = DecodeResourceStatusHashList(R"({"statusHashes":[]})");
  ASSERT_TRUE(list.ok());
  EXPECT_TRUE(list->status_hashes.empty());
  EXPECT_TRUE(DecodeResourceVersionList(R"({"resourceVersions":null})").ok());
}

TEST(ResyncTest, RejectsAbsentOrMalformedPayloads) {
  const std::pair<absl::Status, const char*> cases[] = {
      {DecodeResourceStatusHashList("").status(), "missing"},
      {DecodeResourceStatusHashList("[]").status(), "must be an object"},
      {DecodeResourceStatusHashList(R"({"statusHashes":{}})").status(),
       "data.statusHashes must be an array"},
      {DecodeResourceStatusHashList(R"({"statusHashes":[{"resourceID":1}]})").status(),
       "data.statusHashes[0].resourceID must be a string"},
      {DecodeResourceStatusHashList(R"({"statusHashes":["x"]})").status(),
       "data.statusHashes[0] must be an object"},
      {DecodeResourceVersionList(R"({"resourceVersions":[{"resourceVersion":"1"}]})").status(),
       "data.resourceVersions[0].resourceVersion must be an integer"},
      {DecodeResourceVersionList("{").status(), "not valid JSON"},
  };
  for (const auto& [status, needle] : cases) {
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    EXPECT_NE(std::string(status.message()).find(needle), std::string::npos) << status;
  }
}

}  // namespace
}  // namespace mmi::cloudevents
