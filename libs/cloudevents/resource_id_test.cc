#include "libs/cloudevents/resource_id.h"

#include <set>
#include <string>

#include "gtest/gtest.h"
#include "libs/cloudevents/internal/test_samples.h"
#include "libs/cloudevents/json_format.h"
#include "nlohmann/json.hpp"

namespace mmi::cloudevents {
namespace {

TEST(ResourceIdTest, MatchesTheSpecCheckValues) {
  EXPECT_EQ(WorkResourceId("mw-client-example", "7ff1a8f4-8811-49b4-8c19-9271bc51975e",
                           "e44ec579-9646-549a-b679-db8d19d6da37"),
            "55c61e54-a3f6-563d-9fec-b1fe297bdfdb");
  EXPECT_EQ(WorkResourceId("app-work-client", "cluster1", "openshift-gitops-guestbook-cluster1"),
            "278f3a61-efe5-56de-abba-6aedbfcce272");
}

TEST(ResourceIdTest, MatchesTheSamples) {
  // The grpcclient sample: source mw-client-example, work named by metadata.name in namespace
  // (= consumer) metadata.namespace; resourceid = metadata.uid.
  auto event = DecodeStructuredJson(testing::ReadSample("cloudevents.grpcclient.json"));
  ASSERT_TRUE(event.ok());
  const auto meta = nlohmann::json::parse(*event->MetadataJson());
  EXPECT_EQ(WorkResourceId(event->source, meta["namespace"].get<std::string>(),
                           meta["name"].get<std::string>()),
            *event->ResourceId());
  EXPECT_EQ(meta["uid"], *event->ResourceId());
  // The agent-side AppliedManifestWork is named <hub hash>-<resource ID>.
  const auto applied = nlohmann::json::parse(testing::ReadSample("appliedmanifestwork.json"));
  EXPECT_EQ(applied["spec"]["manifestWorkName"], *event->ResourceId());
  EXPECT_EQ(applied["metadata"]["name"],
            applied["spec"]["hubHash"].get<std::string>() + "-" + *event->ResourceId());
}

TEST(ResourceIdTest, DifferentSourcesGiveDifferentIds) {
  EXPECT_NE(WorkResourceId("a", "c", "w"), WorkResourceId("b", "c", "w"));
}

TEST(UuidTest, ImplementsRfc4122Version5) {
  // RFC 4122 / Python: uuid5(NAMESPACE_DNS, "python.org").
  const Uuid dns = *ParseUuid("6ba7b810-9dad-11d1-80b4-00c04fd430c8");
  EXPECT_EQ(FormatUuid(UuidV5(dns, "python.org")), "886313e1-3b8a-5372-9b90-0c9aee199e5d");
  EXPECT_EQ(FormatUuid(kOidNamespace), "6ba7b812-9dad-11d1-80b4-00c04fd430c8");
}

TEST(UuidTest, ParsesAndFormats) {
  auto uuid = ParseUuid("278F3A61-EFE5-56DE-ABBA-6AEDBFCCE272");
  ASSERT_TRUE(uuid.ok());
  EXPECT_EQ(FormatUuid(*uuid), "278f3a61-efe5-56de-abba-6aedbfcce272");
  for (const char* text :
       {"", "278f3a61efe556deabba6aedbfcce272", "278f3a61-efe5-56de-abba-6aedbfcce27",
        "278f3a61-efe5-56de-abba-6aedbfcce2722", "278f3a61-efe5-56de-abba_6aedbfcce272",
        "g78f3a61-efe5-56de-abba-6aedbfcce272", "278f3a6-1efe5-56de-abba-6aedbfcce272"}) {
    EXPECT_EQ(ParseUuid(text).status().code(), absl::StatusCode::kInvalidArgument) << text;
  }
}

TEST(UuidTest, NewUuidV4IsRandomVersion4) {
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    const std::string id = NewUuidV4();
    ASSERT_EQ(id.size(), 36U);
    EXPECT_EQ(id[14], '4');
    EXPECT_NE(std::string("89ab").find(id[19]), std::string::npos);
    EXPECT_TRUE(ParseUuid(id).ok());
    seen.insert(id);
  }
  EXPECT_EQ(seen.size(), 100U);
}

}  // namespace
}  // namespace mmi::cloudevents
