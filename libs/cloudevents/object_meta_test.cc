#include "libs/cloudevents/object_meta.h"

#include <string>

#include "gtest/gtest.h"
#include "libs/cloudevents/internal/test_samples.h"
#include "libs/cloudevents/json_format.h"
#include "nlohmann/json.hpp"

namespace mmi::cloudevents {
namespace {

using nlohmann::json;
using testing::EventSampleNames;
using testing::ReadSample;

TEST(ObjectMetaTest, ParsesTheMetadataOfEverySample) {
  for (const auto& name : EventSampleNames()) {
    SCOPED_TRACE(name);
    auto event = DecodeStructuredJson(ReadSample(name));
    ASSERT_TRUE(event.ok());
    auto meta = ObjectMetaOf(*event);
    ASSERT_TRUE(meta.ok()) << meta.status();
    EXPECT_EQ(meta->uid, "55c61e54-a3f6-563d-9fec-b1fe297bdfdb");
    EXPECT_EQ(meta->namespace_, "7ff1a8f4-8811-49b4-8c19-9271bc51975e");
    EXPECT_EQ(meta->labels.at("maestro.resource.type"), "2d18a7dc-c731-5753-8aa9-6b2f22e3b12b");
    // Re-encoding keeps the JSON value.
    auto text = FormatObjectMeta(*meta);
    ASSERT_TRUE(text.ok()) << text.status();
    EXPECT_EQ(json::parse(*text), json::parse(*event->MetadataJson()));
  }
}

TEST(ObjectMetaTest, ReadsAgentMetadataMembers) {
  auto event = DecodeStructuredJson(ReadSample("cloudevents.agent.json"));
  ASSERT_TRUE(event.ok());
  auto meta = ObjectMetaOf(*event);
  ASSERT_TRUE(meta.ok()) << meta.status();
  EXPECT_EQ(meta->name, "e44ec579-9646-549a-b679-db8d19d6da37");
  EXPECT_EQ(meta->generation, 1);
  EXPECT_EQ(FormatTimestamp(*meta->creation_timestamp), "2025-12-16T06:00:17Z");
  EXPECT_EQ(meta->finalizers,
            std::vector<std::string>{"cluster.open-cluster-management.io/manifest-work-cleanup"});
  EXPECT_EQ(meta->annotations.at("cloudevents.open-cluster-management.io/datatype"),
            kManifestBundlesDataType);
}

TEST(ObjectMetaTest, FormatsSortedCompactJsonWithSecondsPrecisionTimes) {
  ObjectMeta meta;
  meta.name = "openshift-gitops-guestbook-cluster1";
  meta.namespace_ = "cluster1";
  meta.uid = "278f3a61-efe5-56de-abba-6aedbfcce272";
  meta.resource_version = "1";
  meta.generation = 1;
  meta.creation_timestamp = *ParseTimestamp("2026-06-01T10:00:00Z");
  meta.deletion_timestamp = *ParseTimestamp("2026-06-02T08:00:00.412345678Z");
  auto text = FormatObjectMeta(meta);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(
      *text,
      R"({"creationTimestamp":"2026-06-01T10:00:00Z","deletionTimestamp":"2026-06-02T08:00:00Z",)"
      R"("generation":1,"name":"openshift-gitops-guestbook-cluster1","namespace":"cluster1",)"
      R"("resourceVersion":"1","uid":"278f3a61-efe5-56de-abba-6aedbfcce272"})");
  Event event;
  ASSERT_TRUE(SetObjectMeta(event, meta).ok());
  EXPECT_EQ(*event.MetadataJson(), *text);
}

TEST(ObjectMetaTest, KeepsMembersItDoesNotModel) {
  auto meta = ParseObjectMeta(
      R"({"name":"n","selfLink":"/x","deletionGracePeriodSeconds":30,"managedFields":[{"manager":"m"}],"ownerReferences":[{"kind":"Application","name":"a"}]})");
  ASSERT_TRUE(meta.ok()) << meta.status();
  EXPECT_EQ(meta->other["deletionGracePeriodSeconds"], 30);
  EXPECT_EQ(meta->owner_references.at(0)["kind"], "Application");
  const json round_trip = json::parse(*FormatObjectMeta(*meta));
  EXPECT_EQ(round_trip["selfLink"], "/x");
  EXPECT_EQ(round_trip["managedFields"][0]["manager"], "m");
  EXPECT_EQ(round_trip["ownerReferences"][0]["name"], "a");
}

TEST(ObjectMetaTest, RejectsMalformedMetadata) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "not valid JSON"},
      {"[]", "metadata must be an object"},
      {R"({"name":5})", "metadata.name must be a string"},
      {R"({"generation":"1"})", "metadata.generation must be an integer"},
      {R"({"labels":{"a":1}})", "metadata.labels.a must be a string"},
      {R"({"labels":[]})", "metadata.labels must be an object"},
      {R"({"finalizers":"x"})", "metadata.finalizers must be an array"},
      {R"({"creationTimestamp":"today"})", "metadata.creationTimestamp"},
      {R"({"ownerReferences":[1]})", "metadata.ownerReferences[0] must be an object"},
      {R"({"deletionGracePeriodSeconds":"30"})", "deletionGracePeriodSeconds must be an integer"},
  };
  for (const auto& [text, needle] : cases) {
    auto meta = ParseObjectMeta(text);
    EXPECT_EQ(meta.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_NE(std::string(meta.status().message()).find(needle), std::string::npos)
        << text << " -> " << meta.status();
  }
  Event event;
  EXPECT_EQ(ObjectMetaOf(event).status().code(), absl::StatusCode::kNotFound);
  event.SetInteger(kExtMetadata, 1);
  EXPECT_EQ(ObjectMetaOf(event).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(LogTracingTest, ParsesAndFormatsStringMaps) {
  EXPECT_TRUE(ParseLogTracing("{}")->empty());
  EXPECT_EQ(*FormatLogTracing({}), "{}");
  const LogTracing tracing{{"logging.open-cluster-management.io/trace", "abc"}};
  auto text = FormatLogTracing(tracing);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*ParseLogTracing(*text), tracing);
  EXPECT_EQ(ParseLogTracing(R"({"a":1})").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseLogTracing("[]").status().code(), absl::StatusCode::kInvalidArgument);
  Event event;
  EXPECT_TRUE(LogTracingOf(event)->empty());
  event.SetString(kExtLogTracing, "{bad");
  EXPECT_EQ(LogTracingOf(event).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace mmi::cloudevents
