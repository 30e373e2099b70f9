#include "services/dispatcher/apps/spec_events.h"

#include <utility>

#include "libs/cloudevents/maestro_events.h"
#include "libs/cloudevents/manifest_bundle.h"
#include "libs/cloudevents/object_meta.h"
#include "libs/common/status_macros.h"

namespace mmi::dispatcher {

absl::StatusOr<std::string> EncodedWorkMeta(const Dispatch& d, int32_t version,
                                            std::optional<int32_t> dispatch_version) {
  cloudevents::ObjectMeta meta = d.work_meta;
  meta.resource_version = std::to_string(version);
  meta.generation = version;
  if (dispatch_version.has_value() && !HoldsApplication(d.bundle)) {
    // No Application to carry the stamp (manifest delivery): the work's metadata carries it, and
    // the agent echoes that metadata with the generation its Applied condition observed.
    meta.annotations[kDispatchVersionAnnotation] = std::to_string(*dispatch_version);
  }
  return cloudevents::FormatObjectMeta(meta);
}

absl::StatusOr<cloudevents::Event> MakeSpecEvent(const Dispatch& d, const std::string& source_id,
                                                 bool create, int32_t version,
                                                 int32_t dispatch_version, std::string id,
                                                 cloudevents::Timestamp time) {
  ASSIGN_OR_RETURN(std::string data, cloudevents::EncodeManifestBundle(
                                         StampDispatchVersion(d.bundle, dispatch_version)));
  ASSIGN_OR_RETURN(std::string meta, EncodedWorkMeta(d, version, dispatch_version));
  return cloudevents::MakeSpecRequest({.id = std::move(id),
                                       .source = source_id,
                                       .time = time,
                                       .cluster = d.cluster,
                                       .resource_id = d.resource_id,
                                       .version = version},
                                      create, std::move(meta), std::move(data));
}

absl::StatusOr<cloudevents::Event> MakeDeleteEvent(const ResourceIdentity& resource,
                                                   const std::string& source_id, int32_t version,
                                                   cloudevents::Timestamp deletion_time,
                                                   std::string id, cloudevents::Timestamp time) {
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
  ASSIGN_OR_RETURN(std::string meta_json, cloudevents::FormatObjectMeta(meta));
  return cloudevents::MakeSpecDeleteRequest({.id = std::move(id),
                                             .source = source_id,
                                             .time = time,
                                             .cluster = resource.cluster,
                                             .resource_id = resource.resource_id,
                                             .version = version},
                                            deletion_time, std::move(meta_json));
}

}  // namespace mmi::dispatcher
