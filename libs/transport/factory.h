// Builds the configured transport. The only place (with *_app.cc) that names the concrete
// transports: a std::visit over TransportSettings that does not compile if an alternative is
// unhandled.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "libs/common/clock.h"
#include "libs/transport/publisher.h"
#include "libs/transport/settings.h"
#include "libs/transport/subscriber.h"
#include "prometheus/registry.h"

namespace mmi::transport {

// Borrowed collaborators; both must outlive the transports built from them.
struct TransportDeps {
  Clock& clock;
  prometheus::Registry& registry;
};

struct TransportClients {
  std::unique_ptr<Publisher> publisher;
  std::unique_ptr<Subscriber> subscriber;
};

// Validate the settings (kInvalidArgument with field paths) and build an unstarted instance.
// kFailedPrecondition when the transport was compiled out (MMI_WITH_MQTT/_KAFKA/_GRPC=OFF).
absl::StatusOr<std::unique_ptr<Publisher>> MakePublisher(const TransportSettings& settings,
                                                         const TransportDeps& deps);
absl::StatusOr<std::unique_ptr<Subscriber>> MakeSubscriber(const TransportSettings& settings,
                                                           const TransportDeps& deps);

// Both directions, sharing one connection where the protocol needs it: on gRPC Publish and
// Subscribe use ONE channel, because Maestro answers a status resync only to subscribers of the
// replica that handled the Publish (maestro-protocol.md §6.6). MQTT and Kafka use one client
// per direction.
absl::StatusOr<TransportClients> MakeClients(const TransportSettings& settings,
                                             const TransportDeps& deps);

}  // namespace mmi::transport
