// The CloudEvents the dispatcher sends for one resource (maestro-protocol.md §1.5, §2.6, §2.8,
// §6.1, §6.4): spec create/update requests carrying the ManifestBundle, and delete requests
// carrying `deletiontimestamp`. Pure functions, thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "libs/cloudevents/event.h"
#include "services/dispatcher/apps/payload.h"

namespace mmi::dispatcher {

// What goes on the wire as `resourceversion` (§6.1).
enum class VersionMode {
  // Talking to agents through a broker (MQTT, Kafka): we are the source of truth, so every
  // change carries our own counter (1 on create, +1 per update); agents ignore lower versions
  // and spec resyncs compare against it.
  kCounter,
  // Talking to Maestro's gRPC source server: 0 on create and on update ("whatever is current",
  // so no conflict), Maestro keeps the real version.
  kMaestro,
};

// Identity of a dispatched resource, enough to build a delete request.
struct ResourceIdentity {
  std::string resource_id;
  std::string cluster;
  std::string work_name;
  std::string hub_namespace;
  std::string hub_name;
};

// spec.create_request (`create`) or spec.update_request for `d`. `version` is the wire
// resourceversion, `dispatch_version` our counter (stamped into the Application: payload.h,
// kDispatchVersionAnnotation); `id` a fresh UUID and `time` now. The ManifestBundle JSON in `data`
// is also what the store keeps (see EncodedPayload).
absl::StatusOr<cloudevents::Event> MakeSpecEvent(const Dispatch& d, const std::string& source_id,
                                                 bool create, int32_t version,
                                                 int32_t dispatch_version, std::string id,
                                                 cloudevents::Timestamp time);

// spec.delete_request with `deletiontimestamp` = `deletion_time` (the hub Application's
// deletionTimestamp, or now) and no data.
absl::StatusOr<cloudevents::Event> MakeDeleteEvent(const ResourceIdentity& resource,
                                                   const std::string& source_id, int32_t version,
                                                   cloudevents::Timestamp deletion_time,
                                                   std::string id, cloudevents::Timestamp time);

// The `metadata` extension of `d` at `version` (ObjectMeta JSON). A bundle without an
// Application (manifest delivery) carries `dispatch_version`, when given, in its
// kDispatchVersionAnnotation (the end-to-end acknowledgement of its bundle).
absl::StatusOr<std::string> EncodedWorkMeta(const Dispatch& d, int32_t version,
                                            std::optional<int32_t> dispatch_version = std::nullopt);

}  // namespace mmi::dispatcher
