#include "libs/transport/grpc/maestro_consumer_registry.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "libs/common/log.h"
#include "libs/kube_object/object.h"
#include "nlohmann/json.hpp"

namespace mmi::transport {
namespace {

const log::Logger& Log() {
  static const log::Logger logger("transport.grpc");
  return logger;
}

}  // namespace

MaestroConsumerRegistry::MaestroConsumerRegistry(MaestroRestSettings settings)
    : settings_(std::move(settings)), sender_(MakeCurlRestSender(settings_)) {}

MaestroConsumerRegistry::MaestroConsumerRegistry(MaestroRestSettings settings, RestSender sender)
    : settings_(std::move(settings)), sender_(std::move(sender)) {}

absl::Status MaestroConsumerRegistry::EnsureConsumer(
    std::string_view name, const std::map<std::string, std::string>& labels) {
  if (!kube::IsDns1123Label(name)) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot register Maestro consumer \"", std::string(name),
                     "\": a consumer name must be a DNS-1123 label (lower-case letters, digits "
                     "and '-', at most 63 characters)"));
  }
  nlohmann::json body = {{"name", std::string(name)}};
  if (!labels.empty()) {
    body["labels"] = labels;
  }
  std::string json;
  try {
    json = body.dump();
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot encode labels of consumer \"", std::string(name), "\": ", e.what()));
  }
  const RestRequest request{"POST", MaestroApiUrl(settings_, "/consumers"), std::move(json)};
  absl::StatusOr<RestResponse> response = sender_(request);
  if (!response.ok()) {
    return response.status();
  }
  // An existing name: 409 (maestro-6) where the database error reads "violates unique
  // constraint", but the pinned server's GORM reports "duplicated key not allowed", which Maestro
  // answers as 500 maestro-9 (a general error).
  const bool exists =
      response->status == 409 ||
      (response->status == 500 && absl::StrContains(response->body, "duplicated key not allowed"));
  if (response->status == 201 || response->status == 200 || exists) {
    Log().Info(exists ? "Maestro consumer already exists" : "registered Maestro consumer",
               {{"cluster", std::string(name)}});
    return absl::OkStatus();
  }
  return MaestroHttpError(request, *response);
}

absl::StatusOr<bool> MaestroConsumerRegistry::ConsumerExists(std::string_view name) {
  if (!kube::IsDns1123Label(name)) {
    return false;
  }
  // search=name='<name>' with the quotes and spaces URL-encoded.
  const RestRequest request{
      "GET",
      MaestroApiUrl(settings_,
                    absl::StrCat("/consumers?size=1&search=name%3D%27", std::string(name), "%27")),
      ""};
  absl::StatusOr<RestResponse> response = sender_(request);
  if (!response.ok()) {
    return response.status();
  }
  if (response->status != 200) {
    return MaestroHttpError(request, *response);
  }
  const nlohmann::json json =
      nlohmann::json::parse(response->body, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object() || !json.contains("items") || !json["items"].is_array()) {
    return absl::UnavailableError(
        absl::StrCat("GET ", request.url, ": unexpected body, no items array"));
  }
  for (const nlohmann::json& item : json["items"]) {
    if (item.is_object() && item.value("name", std::string()) == name) {
      return true;
    }
  }
  return false;
}

}  // namespace mmi::transport
