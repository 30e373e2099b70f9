// The status resync request a source publishes after a (re)subscription (maestro-protocol.md
// §6.6): "send me the statuses whose hash differs from these". Sending it is an ordinary
// Publisher::Publish(); each transport routes it (MQTT: the cluster's sourceevents topic, or
// sourceBroadcast for all clusters; gRPC: Maestro answers on our Subscribe stream for every
// cluster; Kafka: sourceEventsTopic).
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "libs/cloudevents/event.h"
#include "libs/cloudevents/resync.h"

namespace mmi::transport {

// A `status.resync_request` from `source_id` for `cluster` ("" = all clusters) carrying `hashes`
// (empty = "send every status"). `id` must be unique (a UUID); `time` is the event time.
// kInvalidArgument when the hash list cannot be encoded.
absl::StatusOr<cloudevents::Event> MakeStatusResyncRequest(
    std::string_view source_id, std::string_view cluster,
    const cloudevents::ResourceStatusHashList& hashes, std::string id, cloudevents::Timestamp time);

}  // namespace mmi::transport
