// MQTT client ids: unique per live connection (maestro-protocol.md §3.1).
#pragma once

#include <string>
#include <string_view>

#include "libs/transport/settings.h"

namespace mmi::transport::internal {

// `<clientId>-<suffix>`, or `<sourceId>-<8 random hex digits>-<suffix>` when clientId is empty.
std::string MqttClientId(const MqttSettings& settings, std::string_view suffix);

}  // namespace mmi::transport::internal
