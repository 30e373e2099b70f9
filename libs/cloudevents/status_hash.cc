#include "libs/cloudevents/status_hash.h"

#include <openssl/evp.h>

#include <array>
#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "libs/cloudevents/internal/json.h"
#include "libs/common/status_macros.h"

namespace mmi::cloudevents {
namespace {

using internal::Json;

bool IsEmptyList(const Json* value) {
  return value == nullptr || value->is_null() || (value->is_array() && value->empty());
}

}  // namespace

std::string Sha256Hex(std::string_view bytes) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  const int ok =
      EVP_Digest(bytes.data(), bytes.size(), digest.data(), &length, EVP_sha256(), nullptr);
  if (ok != 1 || length != 32) {
    std::abort();  // OpenSSL's SHA-256 cannot fail on in-memory input; a failure is a bug.
  }
  static constexpr std::string_view kHex = "0123456789abcdef";
  std::string out;
  out.reserve(64);
  for (unsigned int i = 0; i < length; ++i) {
    out.push_back(kHex[digest[i] >> 4]);
    out.push_back(kHex[digest[i] & 0xF]);
  }
  return out;
}

absl::StatusOr<std::string> StatusHashOfData(const nlohmann::json& status_data) {
  ASSIGN_OR_RETURN(const auto reader, internal::ObjectReader::Make(status_data, "data"));
  Json work_status = Json::object();
  const Json* conditions = reader.Find("conditions");
  if (!IsEmptyList(conditions)) {
    if (!conditions->is_array()) {
      return absl::InvalidArgumentError("data.conditions must be an array");
    }
    work_status["conditions"] = *conditions;
  }
  Json resource_status = Json::object();
  const Json* manifests = reader.Find("resourceStatus");
  if (!IsEmptyList(manifests)) {
    if (!manifests->is_array()) {
      return absl::InvalidArgumentError("data.resourceStatus must be an array");
    }
    resource_status["manifests"] = *manifests;
  }
  work_status["resourceStatus"] = std::move(resource_status);
  ASSIGN_OR_RETURN(const std::string text, internal::GoJson(work_status));
  return Sha256Hex(text);
}

absl::StatusOr<std::string> StatusHash(const ManifestBundleStatus& status) {
  return StatusHashOfData(ToJson(status));
}

}  // namespace mmi::cloudevents
