#include "libs/cloudevents/maestro_events.h"

#include <utility>

namespace mmi::cloudevents {
namespace {

Event Base(std::string id, std::string source, std::string_view type, Timestamp time) {
  Event event;
  event.id = std::move(id);
  event.source = std::move(source);
  event.type = std::string(type);
  event.time = time;
  return event;
}

// The extensions every spec event from a source carries.
Event SpecBase(ResourceEventHeader header, std::string_view type) {
  Event event = Base(std::move(header.id), std::move(header.source), type, header.time);
  event.SetString(kExtClusterName, std::move(header.cluster));
  event.SetString(kExtOriginalSource, "");
  event.SetString(kExtResourceId, std::move(header.resource_id));
  event.SetInteger(kExtResourceVersion, header.version);
  event.SetString(kExtLogTracing, "{}");
  return event;
}

void SetJsonData(Event& event, std::string json) {
  event.data_content_type = std::string(kJsonContentType);
  event.data = std::move(json);
}

}  // namespace

Event MakeSpecRequest(ResourceEventHeader header, bool create, std::string metadata_json,
                      std::string bundle_json) {
  Event event =
      SpecBase(std::move(header), create ? kSpecCreateRequestType : kSpecUpdateRequestType);
  SetJsonData(event, std::move(bundle_json));
  event.SetString(kExtMetadata, std::move(metadata_json));
  return event;
}

Event MakeSpecDeleteRequest(ResourceEventHeader header, Timestamp deletion_time,
                            std::string metadata_json) {
  Event event = SpecBase(std::move(header), kSpecDeleteRequestType);
  event.SetTimestamp(kExtDeletionTimestamp, deletion_time);
  event.SetString(kExtMetadata, std::move(metadata_json));
  return event;
}

Event MakeSpecResyncResponse(ResourceEventHeader header, std::string metadata_json,
                             std::string bundle_json) {
  Event event = SpecBase(std::move(header), kSpecResyncResponseType);
  SetJsonData(event, std::move(bundle_json));
  if (!metadata_json.empty()) {
    event.SetString(kExtMetadata, std::move(metadata_json));
  }
  return event;
}

Event MakeSpecResyncDeleteResponse(ResourceEventHeader header, Timestamp deletion_time) {
  Event event = SpecBase(std::move(header), kSpecResyncResponseType);
  ToSpecResyncDeleteResponse(event, deletion_time);
  return event;
}

void ToSpecResyncDeleteResponse(Event& response, Timestamp deletion_time) {
  response.data.reset();
  response.data_content_type.reset();
  response.RemoveExtension(kExtMetadata);
  response.SetTimestamp(kExtDeletionTimestamp, deletion_time);
}

absl::StatusOr<Event> MakeSpecResyncRequest(std::string_view source, std::string_view cluster,
                                            const ResourceVersionList& versions, std::string id,
                                            Timestamp time) {
  absl::StatusOr<std::string> data = EncodeResourceVersionList(versions);
  if (!data.ok()) {
    return data.status();
  }
  Event event = Base(std::move(id), std::string(source), kSpecResyncRequestType, time);
  event.SetString(kExtClusterName, std::string(cluster));
  event.SetString(kExtOriginalSource, "");
  SetJsonData(event, *std::move(data));
  return event;
}

absl::StatusOr<Event> MakeStatusResyncRequest(std::string_view source_id, std::string_view cluster,
                                              const ResourceStatusHashList& hashes, std::string id,
                                              Timestamp time) {
  absl::StatusOr<std::string> data = EncodeResourceStatusHashList(hashes);
  if (!data.ok()) {
    return data.status();
  }
  Event event = Base(std::move(id), std::string(source_id), kStatusResyncRequestType, time);
  event.SetString(kExtClusterName, std::string(cluster));
  event.SetString(kExtOriginalSource, "");
  SetJsonData(event, *std::move(data));
  return event;
}

Event MakeStatusEvent(ResourceEventHeader header, bool resync_response, StatusEventFields fields,
                      std::string status_json) {
  Event event =
      Base(std::move(header.id), std::move(header.source),
           resync_response ? kStatusResyncResponseType : kStatusUpdateRequestType, header.time);
  event.SetString(kExtClusterName, std::move(header.cluster));
  event.SetString(kExtOriginalSource, std::move(fields.original_source));
  event.SetString(kExtResourceId, std::move(header.resource_id));
  event.SetInteger(kExtResourceVersion, header.version);
  event.SetString(kExtSequenceId, std::move(fields.sequence_id));
  event.SetString(kExtStatusHash, std::move(fields.status_hash));
  event.SetString(kExtMetadata, std::move(fields.metadata_json));
  event.SetString(kExtLogTracing, "{}");
  SetJsonData(event, std::move(status_json));
  return event;
}

ReceivedKind ClassifyReceived(const Event& event) {
  auto type = event.ParsedType();
  if (!type.ok()) {
    return ReceivedKind::kOther;
  }
  if (type->subresource == Subresource::kStatus) {
    if (type->action == Action::kUpdateRequest || type->action == Action::kResyncResponse) {
      return ReceivedKind::kStatus;
    }
    if (type->action == Action::kResyncRequest) {
      return ReceivedKind::kStatusResync;
    }
  } else if (type->action == Action::kResyncRequest) {
    return ReceivedKind::kSpecResync;
  }
  return ReceivedKind::kOther;
}

std::string_view ReceivedKindName(ReceivedKind kind) {
  switch (kind) {
    case ReceivedKind::kStatus:
      return "status";
    case ReceivedKind::kSpecResync:
      return "spec_resync";
    case ReceivedKind::kStatusResync:
      return "status_resync";
    case ReceivedKind::kOther:
      return "other";
  }
  return "other";
}

}  // namespace mmi::cloudevents
