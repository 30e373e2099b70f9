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

void LogRetry(const log::Logger& logger, const MqttSettings& settings, const std::string& client_id,
              std::string_view reason, bool was_connected, int attempt,
              std::chrono::milliseconds delay) {
  if (was_connected) {
    logger.Warn("MQTT connection lost; reconnecting",
                {{"broker", settings.broker_host},
                 {"client_id", client_id},
                 {"cause", std::string(reason)},
                 {"retry_in_ms", static_cast<int64_t>(delay.count())}});
  } else {
    logger.Warn("MQTT connect failed; retrying",
                {{"broker", settings.broker_host},
                 {"client_id", client_id},
                 {"error", std::string(reason)},
                 {"attempt", attempt},
                 {"retry_in_ms", static_cast<int64_t>(delay.count())}});
  }
}

bool SubAckGranted(const log::Logger& logger, absl::Span<const int> reason_codes) {
  for (const int code : reason_codes) {
    if (code >= 0x80) {
      logger.Error("the broker refused a subscription; check the topic filters and the ACL",
                   {{"reason_code", code}});
      return false;
    }
  }
  return true;
}

}  // namespace mmi::transport::internal
