// The status resync request a source publishes after a (re)subscription (maestro-protocol.md
// §6.6): "send me the statuses whose hash differs from these". Built in
// libs/cloudevents/maestro_events.h (named here too for the services that publish it). Sending
// it is an ordinary Publisher::Publish(); each transport routes it (MQTT: the cluster's
// sourceevents topic, or sourceBroadcast for all clusters; gRPC: Maestro answers on our
// Subscribe stream for every cluster; Kafka: sourceEventsTopic).
#pragma once

#include "libs/cloudevents/maestro_events.h"

namespace mmi::transport {

using cloudevents::MakeStatusResyncRequest;

}  // namespace mmi::transport
