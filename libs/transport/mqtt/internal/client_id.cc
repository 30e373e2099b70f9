#include "libs/transport/mqtt/internal/client_id.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "libs/transport/client_id.h"

namespace mmi::transport::internal {

std::string MqttClientId(const MqttSettings& settings, std::string_view suffix) {
  std::string base = settings.client_id;
  if (base.empty()) {
    base = absl::StrCat(settings.source_id, "-", RandomHex(8));
  }
  return absl::StrCat(base, "-", std::string(suffix));
}

std::string PersistentSessionClientId(const MqttSettings& settings, std::string_view suffix) {
  if (settings.shared_group.empty()) {
    return absl::StrCat(settings.source_id, "-", std::string(suffix));
  }
  return absl::StrCat(settings.source_id, "-", settings.shared_group, "-", std::string(suffix));
}

void LogConnected(const log::Logger& logger, const MqttSettings& settings,
                  const std::string& client_id, std::chrono::seconds session_expiry,
                  bool session_present) {
  logger.Info("connected to MQTT broker", {{"broker", settings.broker_host},
                                           {"client_id", client_id},
                                           {"session_present", session_present}});
  if (session_expiry.count() > 0 && !session_present) {
    logger.Info(
        "no MQTT session to resume (first connection, expired, or the broker lost it): what was "
        "sent while no replica was subscribed did not wait for us",
        {{"client_id", client_id},
         {"session_expiry_s", static_cast<int64_t>(session_expiry.count())}});
  }
}

}  // namespace mmi::transport::internal
