#include "services/dispatcher/spec_events.h"

#include <utility>

#include "libs/cloudevents/manifest_bundle.h"
#include "libs/cloudevents/object_meta.h"
#include "libs/common/status_macros.h"

namespace mmi::dispatcher {
namespace {

cloudevents::Event BaseEvent(const std::string& source_id, std::string_view type,
                             const std::string& cluster, const std::string& resource_id,
                             int32_t version, std::string id, cloudevents::Timestamp time) {
  cloudevents::Event event;
  event.id = std::move(id);
  event.source = source_id;
  event.type = std::string(type);
  event.time = time;
  event.SetString(cloudevents::kExtClusterName, cluster);
  event.SetString(cloudevents::kExtOriginalSource, "");
  event.SetString(cloudevents::kExtResourceId, resource_id);
  event.SetInteger(cloudevents::kExtResourceVersion, version);
  event.SetString(cloudevents::kExtLogTracing, "{}");
  return event;
}

}  // namespace

absl::StatusOr<std::string> EncodedWorkMeta(const Dispatch& d, int32_t version) {
  cloudevents::ObjectMeta meta = d.work_meta;
  meta.resource_version = std::to_string(version);
  meta.generation = version;
  return cloudevents::FormatObjectMeta(meta);
}

absl::StatusOr<cloudevents::Event> MakeSpecEvent(const Dispatch& d, const std::string& source_id,
                                                 bool create, int32_t version, std::string id,
                                                 cloudevents::Timestamp time) {
  cloudevents::Event event = BaseEvent(
      source_id, create ? cloudevents::kSpecCreateRequestType : cloudevents::kSpecUpdateRequestType,
      d.cluster, d.resource_id, version, std::move(id), time);
  ASSIGN_OR_RETURN(std::string data, cloudevents::EncodeManifestBundle(d.bundle));
  event.data_content_type = std::string(cloudevents::kJsonContentType);
  event.data = std::move(data);
  ASSIGN_OR_RETURN(std::string meta, EncodedWorkMeta(d, version));
  event.SetString(cloudevents::kExtMetadata, std::move(meta));
  return event;
}

absl::StatusOr<cloudevents::Event> MakeDeleteEvent(const ResourceIdentity& resource,
                                                   const std::string& source_id, int32_t version,
                                                   cloudevents::Timestamp deletion_time,
                                                   std::string id, cloudevents::Timestamp time) {
  cloudevents::Event event =
      BaseEvent(source_id, cloudevents::kSpecDeleteRequestType, resource.cluster,
                resource.resource_id, version, std::move(id), time);
  event.SetTimestamp(cloudevents::kExtDeletionTimestamp, deletion_time);
  cloudevents::ObjectMeta meta;
  meta.name = resource.work_name;
  meta.namespace_ = resource.cluster;
  meta.uid = resource.resource_id;
  meta.resource_version = std::to_string(version);
  meta.generation = version;
  meta.deletion_timestamp = deletion_time;
  if (!resource.hub_namespace.empty()) {
    meta.annotations[kHubAppNamespaceAnnotation] = resource.hub_namespace;
    meta.annotations[kHubAppNameAnnotation] = resource.hub_name;
  }
  RETURN_IF_ERROR(cloudevents::SetObjectMeta(event, meta));
  return event;
}

}  // namespace mmi::dispatcher
