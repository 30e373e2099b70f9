#include "libs/service/admin.h"

#include <utility>

namespace mmi::service {

std::unique_ptr<metrics::AdminServer> MakeAdminServer(
    const std::string& listen_address, std::shared_ptr<prometheus::Registry> registry,
    const transport::Publisher& publisher) {
  metrics::AdminServerSettings settings;
  settings.listen_address = listen_address;
  auto admin = std::make_unique<metrics::AdminServer>(settings, std::move(registry));
  admin->AddReadinessCheck("broker", [&publisher] {
    return publisher.connected() ? absl::OkStatus()
                                 : absl::UnavailableError("transport not connected");
  });
  return admin;
}

}  // namespace mmi::service
