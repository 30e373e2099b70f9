// MQTT client ids (unique per live connection, maestro-protocol.md §3.1), and what every MQTT
// connection of ours logs and decides alike, whichever its client library.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "absl/types/span.h"
#include "libs/common/log.h"
#include "libs/transport/settings.h"

namespace mmi::transport::internal {

// `<clientId>-<suffix>`, or `<sourceId>-<8 random hex digits>-<suffix>` when clientId is empty.
std::string MqttClientId(const MqttSettings& settings, std::string_view suffix);

// `<sourceId>-<sharedGroup>-<suffix>` (`<sourceId>-<suffix>` without a group): the same for every
// replica and restart of one service, so a persistent session is resumed (settings.h,
// sessionExpiry). Services that share a source id need distinct shared groups.
std::string PersistentSessionClientId(const MqttSettings& settings, std::string_view suffix);

// Logs an accepted CONNACK, and that no session was resumed when one was asked for
// (`session_expiry` > 0).
void LogConnected(const log::Logger& logger, const MqttSettings& settings,
                  const std::string& client_id, std::chrono::seconds session_expiry,
                  bool session_present);

// Logs why a connection ended (`was_connected`) or could not be made, with the backoff's
// `attempt` and `delay` before the next one.
void LogRetry(const log::Logger& logger, const MqttSettings& settings, const std::string& client_id,
              std::string_view reason, bool was_connected, int attempt,
              std::chrono::milliseconds delay);

// A SUBACK's verdict on our SUBSCRIBE: false, with an error log, when the broker refused one of
// its filters (a reason code >= 0x80).
bool SubAckGranted(const log::Logger& logger, absl::Span<const int> reason_codes);

}  // namespace mmi::transport::internal
