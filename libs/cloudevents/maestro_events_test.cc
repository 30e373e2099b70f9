#include "libs/cloudevents/maestro_events.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace mmi::cloudevents {
namespace {

const Timestamp kTime(std::chrono::seconds(1'780'308'000));
const Timestamp kDeletion(std::chrono::seconds(1'780'307'000));
constexpr std::string_view kResourceId = "278f3a61-efe5-56de-abba-6aedbfcce272";

ResourceEventHeader Header(std::string source = "mmi") {
  return {.id = "id-1",
          .source = std::move(source),
          .time = kTime,
          .cluster = "cluster1",
          .resource_id = std::string(kResourceId),
          .version = 3};
}

std::vector<std::string> ExtensionNames(const Event& event) {
  std::vector<std::string> names;
  for (const auto& [name, value] : event.extensions) {
    names.push_back(name);
  }
  return names;  // sorted: extensions is a std::map
}

void ExpectSpecBase(const Event& event, std::string_view type) {
  EXPECT_EQ(event.id, "id-1");
  EXPECT_EQ(event.source, "mmi");
  EXPECT_EQ(event.type, type);
  EXPECT_EQ(event.time, kTime);
  EXPECT_EQ(*event.ClusterName(), "cluster1");
  EXPECT_EQ(*event.OriginalSource(), "");
  EXPECT_EQ(*event.ResourceId(), kResourceId);
  EXPECT_EQ(*event.ResourceVersion(), 3);
  EXPECT_EQ(*event.LogTracingJson(), "{}");
}

TEST(MaestroEventsTest, SpecCreateRequestCarriesMetadataAndTheBundle) {
  Event event =
      MakeSpecRequest(Header(), /*create=*/true, R"({"name":"w"})", R"({"manifests":[]})");
  ExpectSpecBase(event, kSpecCreateRequestType);
  EXPECT_EQ(ExtensionNames(event),
            (std::vector<std::string>{"clustername", "logtracing", "metadata", "originalsource",
                                      "resourceid", "resourceversion"}));
  EXPECT_EQ(*event.MetadataJson(), R"({"name":"w"})");
  EXPECT_EQ(event.data_content_type, std::string(kJsonContentType));
  EXPECT_EQ(event.data, std::string(R"({"manifests":[]})"));
}

TEST(MaestroEventsTest, SpecUpdateRequestDiffersOnlyInType) {
  Event create = MakeSpecRequest(Header(), /*create=*/true, "{}", "{}");
  Event update = MakeSpecRequest(Header(), /*create=*/false, "{}", "{}");
  EXPECT_EQ(update.type, kSpecUpdateRequestType);
  update.type = create.type;
  EXPECT_EQ(update, create);
}

TEST(MaestroEventsTest, SpecDeleteRequestCarriesTheDeletionTimestampAndNoData) {
  Event event = MakeSpecDeleteRequest(Header(), kDeletion, R"({"name":"w"})");
  ExpectSpecBase(event, kSpecDeleteRequestType);
  EXPECT_EQ(ExtensionNames(event),
            (std::vector<std::string>{"clustername", "deletiontimestamp", "logtracing", "metadata",
                                      "originalsource", "resourceid", "resourceversion"}));
  EXPECT_EQ(*event.DeletionTimestamp(), kDeletion);
  EXPECT_EQ(*event.MetadataJson(), R"({"name":"w"})");
  EXPECT_FALSE(event.data.has_value());
  EXPECT_FALSE(event.data_content_type.has_value());
}

TEST(MaestroEventsTest, SpecResyncResponseCarriesTheStoredSpec) {
  Event event = MakeSpecResyncResponse(Header(), R"({"name":"w"})", R"({"manifests":[]})");
  ExpectSpecBase(event, kSpecResyncResponseType);
  EXPECT_EQ(ExtensionNames(event),
            (std::vector<std::string>{"clustername", "logtracing", "metadata", "originalsource",
                                      "resourceid", "resourceversion"}));
  EXPECT_EQ(event.data_content_type, std::string(kJsonContentType));
  EXPECT_EQ(event.data, std::string(R"({"manifests":[]})"));
}

TEST(MaestroEventsTest, SpecResyncResponseWithoutStoredMetadataHasNoMetadataExtension) {
  Event event = MakeSpecResyncResponse(Header(), "", R"({"manifests":[]})");
  EXPECT_FALSE(event.HasExtension(kExtMetadata));
}

TEST(MaestroEventsTest, SpecResyncDeleteResponseCarriesTheDeletionTimestampOnly) {
  Event event = MakeSpecResyncDeleteResponse(Header(), kDeletion);
  ExpectSpecBase(event, kSpecResyncResponseType);
  EXPECT_EQ(ExtensionNames(event),
            (std::vector<std::string>{"clustername", "deletiontimestamp", "logtracing",
                                      "originalsource", "resourceid", "resourceversion"}));
  EXPECT_EQ(*event.DeletionTimestamp(), kDeletion);
  EXPECT_FALSE(event.data.has_value());
  EXPECT_FALSE(event.data_content_type.has_value());
}

TEST(MaestroEventsTest, ASpecResyncResponseTurnsIntoTheDeleteAnswer) {
  Event event = MakeSpecResyncResponse(Header(), R"({"name":"w"})", R"({"manifests":[]})");
  ToSpecResyncDeleteResponse(event, kDeletion);
  EXPECT_EQ(event, MakeSpecResyncDeleteResponse(Header(), kDeletion));
}

TEST(MaestroEventsTest, SpecResyncRequestNamesTheAgentsClusterAndItsVersions) {
  ResourceVersionList versions;
  versions.resource_versions.push_back({std::string(kResourceId), 3});
  auto event = MakeSpecResyncRequest("agent-1", "cluster1", versions, "id-2", kTime);
  ASSERT_TRUE(event.ok()) << event.status();
  EXPECT_EQ(event->id, "id-2");
  EXPECT_EQ(event->source, "agent-1");
  EXPECT_EQ(event->type, kSpecResyncRequestType);
  EXPECT_EQ(event->time, kTime);
  EXPECT_EQ(ExtensionNames(*event), (std::vector<std::string>{"clustername", "originalsource"}));
  EXPECT_EQ(*event->ClusterName(), "cluster1");
  EXPECT_EQ(*event->OriginalSource(), "");
  EXPECT_EQ(event->data_content_type, std::string(kJsonContentType));
  auto decoded = DecodeResourceVersionList(*event->data);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(*decoded, versions);
}

TEST(MaestroEventsTest, StatusResyncRequestNamesTheTargetClusterAndTheHashes) {
  ResourceStatusHashList hashes;
  hashes.status_hashes.push_back({std::string(kResourceId), std::string(64, 'a')});
  auto event = MakeStatusResyncRequest("mmi", "", hashes, "id-3", kTime);
  ASSERT_TRUE(event.ok()) << event.status();
  EXPECT_EQ(event->id, "id-3");
  EXPECT_EQ(event->source, "mmi");
  EXPECT_EQ(event->type, kStatusResyncRequestType);
  EXPECT_EQ(event->time, kTime);
  EXPECT_EQ(ExtensionNames(*event), (std::vector<std::string>{"clustername", "originalsource"}));
  EXPECT_EQ(*event->ClusterName(), "");
  EXPECT_EQ(*event->OriginalSource(), "");
  EXPECT_EQ(event->data_content_type, std::string(kJsonContentType));
  auto decoded = DecodeResourceStatusHashList(*event->data);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(*decoded, hashes);
}

StatusEventFields Fields() {
  return {.original_source = "mmi",
          .sequence_id = "1234567890",
          .status_hash = std::string(64, 'b'),
          .metadata_json = R"({"name":"w"})"};
}

TEST(MaestroEventsTest, StatusUpdateRequestCarriesEveryStatusExtension) {
  Event event = MakeStatusEvent(Header("agent-1"), /*resync_response=*/false, Fields(),
                                R"({"conditions":[]})");
  EXPECT_EQ(event.id, "id-1");
  EXPECT_EQ(event.source, "agent-1");
  EXPECT_EQ(event.type, kStatusUpdateRequestType);
  EXPECT_EQ(event.time, kTime);
  EXPECT_EQ(
      ExtensionNames(event),
      (std::vector<std::string>{"clustername", "logtracing", "metadata", "originalsource",
                                "resourceid", "resourceversion", "sequenceid", "statushash"}));
  EXPECT_EQ(*event.ClusterName(), "cluster1");
  EXPECT_EQ(*event.OriginalSource(), "mmi");
  EXPECT_EQ(*event.ResourceId(), kResourceId);
  EXPECT_EQ(*event.ResourceVersion(), 3);
  EXPECT_EQ(*event.SequenceId(), "1234567890");
  EXPECT_EQ(*event.StatusHash(), std::string(64, 'b'));
  EXPECT_EQ(*event.MetadataJson(), R"({"name":"w"})");
  EXPECT_EQ(*event.LogTracingJson(), "{}");
  EXPECT_EQ(event.data_content_type, std::string(kJsonContentType));
  EXPECT_EQ(event.data, std::string(R"({"conditions":[]})"));
}

TEST(MaestroEventsTest, StatusResyncResponseDiffersOnlyInType) {
  Event update = MakeStatusEvent(Header("agent-1"), /*resync_response=*/false, Fields(), "{}");
  Event response = MakeStatusEvent(Header("agent-1"), /*resync_response=*/true, Fields(), "{}");
  EXPECT_EQ(response.type, kStatusResyncResponseType);
  response.type = update.type;
  EXPECT_EQ(response, update);
}

Event OfType(std::string_view type) {
  Event event;
  event.type = std::string(type);
  return event;
}

TEST(MaestroEventsTest, ClassifiesReceivedEventsIntoTheClosedSet) {
  EXPECT_EQ(ClassifyReceived(OfType(kStatusUpdateRequestType)), ReceivedKind::kStatus);
  EXPECT_EQ(ClassifyReceived(OfType(kStatusResyncResponseType)), ReceivedKind::kStatus);
  EXPECT_EQ(ClassifyReceived(OfType(kStatusResyncRequestType)), ReceivedKind::kStatusResync);
  EXPECT_EQ(ClassifyReceived(OfType(kSpecResyncRequestType)), ReceivedKind::kSpecResync);
  EXPECT_EQ(ClassifyReceived(OfType(kSpecCreateRequestType)), ReceivedKind::kOther);
  EXPECT_EQ(ClassifyReceived(OfType("not.a.type")), ReceivedKind::kOther);
  EXPECT_EQ(ReceivedKindName(ReceivedKind::kStatus), "status");
  EXPECT_EQ(ReceivedKindName(ReceivedKind::kSpecResync), "spec_resync");
  EXPECT_EQ(ReceivedKindName(ReceivedKind::kStatusResync), "status_resync");
  EXPECT_EQ(ReceivedKindName(ReceivedKind::kOther), "other");
}

}  // namespace
}  // namespace mmi::cloudevents
