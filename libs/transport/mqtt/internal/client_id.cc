#include "libs/transport/mqtt/internal/client_id.h"

#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace mmi::transport::internal {

std::string MqttClientId(const MqttSettings& settings, std::string_view suffix) {
  std::string base = settings.client_id;
  if (base.empty()) {
    std::random_device random;
    base = absl::StrCat(settings.source_id, "-", absl::StrFormat("%08x", random()));
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
