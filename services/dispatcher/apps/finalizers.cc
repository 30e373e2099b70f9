#include "services/dispatcher/apps/finalizers.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "services/dispatcher/apps/payload.h"

namespace mmi::dispatcher {

using nlohmann::json;

bool HasResourcesFinalizer(const json& app) { return ReleaseFinalizerPatch(app).has_value(); }

std::optional<json> ReleaseFinalizerPatch(const json& app) {
  if (!app.is_object()) {
    return std::nullopt;
  }
  auto meta = app.find("metadata");
  if (meta == app.end() || !meta->is_object()) {
    return std::nullopt;
  }
  auto finalizers = meta->find("finalizers");
  if (finalizers == meta->end() || !finalizers->is_array()) {
    return std::nullopt;
  }
  json ops = json::array();
  // Descending indices: removing one does not shift the ones still to remove.
  for (size_t i = finalizers->size(); i-- > 0;) {
    if ((*finalizers)[i] == kResourcesFinalizer) {
      const std::string path = absl::StrCat("/metadata/finalizers/", i);
      ops.push_back({{"op", "test"}, {"path", path}, {"value", kResourcesFinalizer}});
      ops.push_back({{"op", "remove"}, {"path", path}});
    }
  }
  if (ops.empty()) {
    return std::nullopt;
  }
  return ops;
}

}  // namespace mmi::dispatcher
