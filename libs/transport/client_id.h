// Random client identities for broker connections (MQTT client ids, Kafka consumer groups):
// unique per live connection, as maestro-protocol.md §3.1 requires.
#pragma once

#include <string>

namespace mmi::transport {

// `digits` random lowercase hex digits (from std::random_device). Thread-safe.
std::string RandomHex(int digits);

}  // namespace mmi::transport
