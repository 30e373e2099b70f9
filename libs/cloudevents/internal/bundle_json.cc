#include "libs/cloudevents/internal/bundle_json.h"

#include "absl/strings/str_cat.h"
#include "libs/cloudevents/json_format.h"

namespace mmi::cloudevents::internal {

absl::StatusOr<std::string> EncodeJson(const Json& value, std::string_view what) {
  auto text = GoJson(value);
  if (!text.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("cannot encode ", std::string(what), ": ",
                                                   std::string(text.status().message())));
  }
  return text;
}

absl::Status CheckEventData(const Event& event) {
  if (!event.data.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat("CloudEvent ", Quote(event.id), " of type ",
                                                   Quote(event.type), " has no data"));
  }
  if (event.data_content_type.has_value() && !IsJsonContentType(*event.data_content_type)) {
    return absl::InvalidArgumentError(
        absl::StrCat("CloudEvent ", Quote(event.id), " has datacontenttype ",
                     Quote(*event.data_content_type), ", want application/json"));
  }
  return absl::OkStatus();
}

}  // namespace mmi::cloudevents::internal
