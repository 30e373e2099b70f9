#include "libs/transport/mqtt/internal/tls_files.h"

#include <filesystem>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"

namespace mmi::transport::internal {
namespace {

absl::Status CheckReadable(const std::string& path, std::string_view field) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return absl::FailedPreconditionError(
        absl::StrCat("transport.mqtt.", std::string(field), ": file \"", path,
                     "\" does not exist or is not a regular file; check the mounted secret"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckTlsFiles(const TlsSettings& tls) {
  if (!tls.enabled) {
    return absl::OkStatus();
  }
  if (!tls.ca_file.empty()) {
    if (absl::Status s = CheckReadable(tls.ca_file, "tls.caFile"); !s.ok()) {
      return s;
    }
  }
  if (!tls.client_cert_file.empty()) {
    if (absl::Status s = CheckReadable(tls.client_cert_file, "tls.clientCertFile"); !s.ok()) {
      return s;
    }
    if (absl::Status s = CheckReadable(tls.client_key_file, "tls.clientKeyFile"); !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace mmi::transport::internal
