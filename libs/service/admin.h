// The admin endpoint (/metrics, /healthz, /readyz) with the checks both services share.
#pragma once

#include <memory>
#include <string>

#include "libs/metrics/admin_server.h"
#include "libs/transport/publisher.h"

namespace prometheus {
class Registry;
}  // namespace prometheus

namespace mmi::service {

// An AdminServer on `listen_address` serving `registry`, with the "broker" readiness check (the
// publisher's connection). Readiness reflects dependencies only, never leadership: a standby
// replica is ready (leadership is the `mmi_leader_election_is_leader` gauge, see hub.h).
// `publisher` must outlive the server. Add the service's own checks, then Start().
std::unique_ptr<metrics::AdminServer> MakeAdminServer(
    const std::string& listen_address, std::shared_ptr<prometheus::Registry> registry,
    const transport::Publisher& publisher);

}  // namespace mmi::service
