// The `transport` section of a service's config file (keys in parentheses in settings.h), read
// with config::YamlReader so that both services accept exactly the same keys:
//
//   transport:
//     type: mqtt            # mqtt (default) | grpc | kafka
//     mqtt: {brokerHost: "broker:1883", sourceId: app-work-client, tls: {caFile: ...}, ...}
//     grpc: {...}
//     kafka: {...}
//
// Every type section present is read and checked (types, unknown keys); the one `type` names is
// returned. Values are not validated here: call ValidateTransportSettings() after the
// environment and the service's own defaults have been applied.
#pragma once

#include <optional>
#include <string>

#include "libs/common/config_yaml.h"
#include "libs/transport/settings.h"

namespace mmi::transport {

// Reads `section` (the `transport` mapping) into `out`; errors go to the section's reader.
void ReadTransportSettings(config::YamlSection section, TransportSettings& out);

// Secrets that come from the environment rather than the config file: `password` is the MQTT
// password or the Kafka SASL password, `token` the gRPC bearer token. Unset or empty values and
// values for another transport type are ignored.
void ApplyTransportSecrets(TransportSettings& settings, const std::optional<std::string>& password,
                           const std::optional<std::string>& token);

// The source id of whichever transport is selected.
std::string& SourceIdOf(TransportSettings& settings);

}  // namespace mmi::transport
