// Helpers shared by the ManifestBundle and ManifestBundleStatus codecs (manifest_bundle.cc,
// manifest_bundle_status.cc).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "libs/cloudevents/event.h"
#include "libs/cloudevents/internal/json.h"
#include "libs/common/status_macros.h"

namespace mmi::cloudevents::internal {

// Calls `each(element, element_path)` for each element of the array member (absent/null = none).
template <typename Fn>
absl::Status ForEachElement(const ObjectReader& reader, std::string_view member, Fn each) {
  const Json* value = reader.Find(member);
  if (value == nullptr) {
    return absl::OkStatus();
  }
  const std::string path = reader.PathOf(member);
  ASSIGN_OR_RETURN(const Json::array_t* array, internal::JsonArray(*value, path));
  if (array == nullptr) {
    return absl::OkStatus();
  }
  for (std::size_t i = 0; i < array->size(); ++i) {
    RETURN_IF_ERROR(each((*array)[i], IndexPath(path, i)));
  }
  return absl::OkStatus();
}

// `value` as the Go agent's encoding/json writes it; kInvalidArgument naming `what` otherwise.
absl::StatusOr<std::string> EncodeJson(const Json& value, std::string_view what);

// kInvalidArgument unless `event` carries data of a JSON content type (or none).
absl::Status CheckEventData(const Event& event);

}  // namespace mmi::cloudevents::internal
