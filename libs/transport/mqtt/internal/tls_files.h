// The TLS files an MQTT client is configured with, checked before it connects.
#pragma once

#include "absl/status/status.h"
#include "libs/transport/settings.h"

namespace mmi::transport::internal {

// With TLS on: the CA file (when set) and the client certificate and key (when a certificate is
// set) must be regular files; kFailedPrecondition names the field and the file otherwise.
absl::Status CheckTlsFiles(const TlsSettings& tls);

}  // namespace mmi::transport::internal
