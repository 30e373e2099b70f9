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

}  // namespace mmi::transport::internal
