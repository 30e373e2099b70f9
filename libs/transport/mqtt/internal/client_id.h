// MQTT client ids: unique per live connection (maestro-protocol.md §3.1), or stable for a
// persistent session.
#pragma once

#include <string>
#include <string_view>

#include "libs/transport/settings.h"

namespace mmi::transport::internal {

// `<clientId>-<suffix>`, or `<sourceId>-<8 random hex digits>-<suffix>` when clientId is empty.
std::string MqttClientId(const MqttSettings& settings, std::string_view suffix);

// `<sourceId>-<sharedGroup>-<suffix>` (`<sourceId>-<suffix>` without a group): the same for every
// replica and restart of one service, so a persistent session is resumed (settings.h,
// sessionExpiry). Services that share a source id need distinct shared groups.
std::string PersistentSessionClientId(const MqttSettings& settings, std::string_view suffix);

}  // namespace mmi::transport::internal
