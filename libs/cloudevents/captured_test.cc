// The traffic captured from the real Maestro server and work agent (../shared/spec/samples/
// captured/) through our codecs: every record decodes, every payload parses, our encoder writes
// back what the real peers wrote, and the agent's status hashes are the ones we compute.
#include "libs/cloudevents/testing/captured.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "libs/cloudevents/manifest_bundle.h"
#include "libs/cloudevents/mqtt_codec.h"
#include "libs/cloudevents/object_meta.h"
#include "libs/cloudevents/resource_id.h"
#include "libs/cloudevents/resync.h"
#include "libs/cloudevents/status_hash.h"
#include "nlohmann/json.hpp"

namespace mmi::cloudevents {
namespace {

using testing::CapturedRecord;
using testing::ReadCaptured;

std::vector<CapturedRecord> Records(std::string_view file) {
  auto records = ReadCaptured(file);
  EXPECT_TRUE(records.ok()) << records.status();
  return records.ok() ? *std::move(records) : std::vector<CapturedRecord>{};
}

// sources/<source>/consumers/<cluster>/<sourceevents|agentevents>
std::vector<std::string> TopicSegments(const std::string& topic) {
  return absl::StrSplit(topic, '/');
}

class CapturedTest : public ::testing::TestWithParam<std::string_view> {};

TEST_P(CapturedTest, EveryRecordDecodesAndCarriesTheClusterOfItsTopic) {
  const auto records = Records(GetParam());
  ASSERT_FALSE(records.empty());
  for (const CapturedRecord& record : records) {
    SCOPED_TRACE(::testing::Message() << GetParam() << ":" << record.line);
    auto event = DecodeMqtt(record.message);
    ASSERT_TRUE(event.ok()) << event.status();
    auto type = event->ParsedType();
    ASSERT_TRUE(type.ok()) << type.status();
    EXPECT_EQ(type->data_type.ToString(),
              "io.open-cluster-management.works.v1alpha1.manifestbundles");
    const auto segments = TopicSegments(record.topic);
    ASSERT_EQ(segments.size(), 5u) << record.topic;
    EXPECT_EQ(event->ClusterName().value_or("?"), segments[3]);
  }
}

TEST_P(CapturedTest, OurEncoderWritesBackWhatTheRealPeerWrote) {
  for (const CapturedRecord& record : Records(GetParam())) {
    SCOPED_TRACE(::testing::Message() << GetParam() << ":" << record.line);
    auto event = DecodeMqtt(record.message);
    ASSERT_TRUE(event.ok()) << event.status();
    auto encoded = EncodeMqtt(*event);
    ASSERT_TRUE(encoded.ok()) << encoded.status();
    auto again = DecodeMqtt(*encoded);
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(*again, *event);
    EXPECT_EQ(encoded->payload, record.message.payload) << "payload bytes differ";
    EXPECT_EQ(encoded->content_type, record.message.content_type);
    // Same user properties (the capture lists them in the broker's order, not ours).
    std::set<std::pair<std::string, std::string>> ours(encoded->user_properties.begin(),
                                                       encoded->user_properties.end());
    std::set<std::pair<std::string, std::string>> theirs(record.message.user_properties.begin(),
                                                         record.message.user_properties.end());
    EXPECT_EQ(ours, theirs);
  }
}

INSTANTIATE_TEST_SUITE_P(BothDirections, CapturedTest,
                         ::testing::Values(testing::kCapturedSourceEvents,
                                           testing::kCapturedAgentEvents),
                         [](const auto& info) {
                           return std::string(info.param.substr(0, info.param.find('.')));
                         });

TEST(CapturedSpecEventsTest, PayloadsParseAndResourceIdsFollowTheUuidV5Rule) {
  int bundles = 0;
  int deletes = 0;
  int status_resyncs = 0;
  for (const CapturedRecord& record : Records(testing::kCapturedSourceEvents)) {
    SCOPED_TRACE(::testing::Message() << "sourceevents.jsonl:" << record.line);
    auto event = DecodeMqtt(record.message);
    ASSERT_TRUE(event.ok()) << event.status();
    if (event->type == kStatusResyncRequestType) {
      auto list = DecodeResourceStatusHashList(event->data.value_or(""));
      EXPECT_TRUE(list.ok()) << list.status();
      ++status_resyncs;
      continue;
    }
    const std::string id = event->ResourceId().value_or("");
    auto meta = ObjectMetaOf(*event);
    ASSERT_TRUE(meta.ok()) << meta.status();
    const std::string cluster = event->ClusterName().value_or("");
    if (meta->name != id) {
      // Straight from our dispatcher (direct MQTT): the work keeps its name, uid = resource id.
      EXPECT_EQ(WorkResourceId("app-work-client", cluster, meta->name), id);
      EXPECT_EQ(meta->uid, id);
    } else {
      // Relayed by Maestro, which names the work after the id (§6.8): the hub name is in the
      // annotations, and the id is the rule's for our source id and work name.
      const std::string work =
          meta->annotations.at("apps.open-cluster-management.io/hub-application-namespace") + "-" +
          meta->annotations.at("apps.open-cluster-management.io/hub-application-name");
      EXPECT_EQ(WorkResourceId("app-work-client", cluster, work), id);
    }
    if (event->data.has_value() && !event->data->empty()) {
      auto bundle = ManifestBundleOf(*event);
      ASSERT_TRUE(bundle.ok()) << bundle.status();
      ASSERT_EQ(bundle->manifests.size(), 1u);
      EXPECT_EQ(bundle->manifests[0].value("kind", ""), "Application");
      ++bundles;
    } else {
      EXPECT_TRUE(event->DeletionTimestamp().ok()) << "a spec event without data is a delete";
      ++deletes;
    }
  }
  EXPECT_GT(bundles, 0);
  EXPECT_GT(deletes, 0);
  EXPECT_GT(status_resyncs, 0);
}

TEST(CapturedAgentEventsTest, StatusPayloadsParseAndTheirHashesAreOurs) {
  int statuses = 0;
  int spec_resyncs = 0;
  for (const CapturedRecord& record : Records(testing::kCapturedAgentEvents)) {
    SCOPED_TRACE(::testing::Message() << "agentevents.jsonl:" << record.line);
    auto event = DecodeMqtt(record.message);
    ASSERT_TRUE(event.ok()) << event.status();
    if (event->type == kSpecResyncRequestType) {
      auto list = DecodeResourceVersionList(event->data.value_or(""));
      EXPECT_TRUE(list.ok()) << list.status();
      ++spec_resyncs;
      continue;
    }
    auto status = ManifestBundleStatusOf(*event);
    ASSERT_TRUE(status.ok()) << status.status();
    const auto data = nlohmann::json::parse(*event->data);
    auto hash = StatusHashOfData(data);
    ASSERT_TRUE(hash.ok()) << hash.status();
    EXPECT_EQ(*hash, event->StatusHash().value_or("")) << "the agent's statushash";
    EXPECT_TRUE(event->SequenceId().ok());
    EXPECT_TRUE(event->ResourceVersion().ok());
    ++statuses;
  }
  EXPECT_GT(statuses, 30);
  EXPECT_GT(spec_resyncs, 0);
}

TEST(CapturedRestTest, MaestroStoresOurResourceUnderTheUuidV5Id) {
  auto text = testing::ReadCapturedFile("rest-resource-bundle.json");
  ASSERT_TRUE(text.ok()) << text.status();
  const auto list = nlohmann::json::parse(*text);
  ASSERT_TRUE(list.contains("items")) << list.dump().substr(0, 200);
  ASSERT_FALSE(list["items"].empty());
  for (const auto& item : list["items"]) {
    const std::string consumer = item.value("consumer_name", "");
    const auto& meta = item.at("metadata");
    const std::string work =
        meta.at("annotations")
            .value("apps.open-cluster-management.io/hub-application-namespace", "") +
        "-" +
        meta.at("annotations").value("apps.open-cluster-management.io/hub-application-name", "");
    EXPECT_EQ(item.value("id", ""), WorkResourceId("app-work-client", consumer, work));
  }
}

}  // namespace
}  // namespace mmi::cloudevents
