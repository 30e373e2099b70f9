#include "libs/transport/grpc/maestro_resource_bundles.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "libs/cloudevents/resource_id.h"

namespace mmi::transport {
MaestroResourceBundles::MaestroResourceBundles(MaestroRestSettings settings)
    : settings_(std::move(settings)), sender_(MakeCurlRestSender(settings_)) {}

MaestroResourceBundles::MaestroResourceBundles(MaestroRestSettings settings, RestSender sender)
    : settings_(std::move(settings)), sender_(std::move(sender)) {}

absl::StatusOr<bool> MaestroResourceBundles::Exists(std::string_view resource_id) const {
  if (!cloudevents::ParseUuid(resource_id).ok()) {
    return absl::InvalidArgumentError(absl::StrCat("cannot look up Maestro resource bundle \"",
                                                   std::string(resource_id),
                                                   "\": a resource id is a UUID"));
  }
  const RestRequest request{
      "GET", MaestroApiUrl(settings_, absl::StrCat("/resource-bundles/", std::string(resource_id))),
      ""};
  absl::StatusOr<RestResponse> response = sender_(request);
  if (!response.ok()) {
    return response.status();
  }
  if (response->status == 200) {
    return true;
  }
  if (response->status == 404) {
    return false;
  }
  return MaestroHttpError(request, *response);
}

}  // namespace mmi::transport
