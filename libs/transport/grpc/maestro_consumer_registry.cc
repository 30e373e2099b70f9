#include "libs/transport/grpc/maestro_consumer_registry.h"

#include <curl/curl.h>

#include <memory>
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

size_t AppendBody(char* data, size_t size, size_t count, void* out) {
  static_cast<std::string*>(out)->append(data, size * count);
  return size * count;
}

// libcurl: one easy handle per request (thread-safe once curl_global_init ran, which the first
// curl_easy_init does implicitly on Linux/OpenSSL builds).
RestSender CurlSender(const MaestroRestSettings& settings) {
  return [settings](const RestRequest& request) -> absl::StatusOr<RestResponse> {
    std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), &curl_easy_cleanup);
    if (curl == nullptr) {
      return absl::UnavailableError("libcurl: curl_easy_init failed");
    }
    RestResponse response;
    curl_slist* headers = nullptr;
    headers = curl_slist_append(headers, "Content-Type: application/json");
    headers = curl_slist_append(headers, "Accept: application/json");
    std::string auth;
    if (!settings.bearer_token.empty()) {
      auth = absl::StrCat("Authorization: Bearer ", settings.bearer_token);
      headers = curl_slist_append(headers, auth.c_str());
    }
    std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> header_guard(headers,
                                                                             &curl_slist_free_all);
    CURL* h = curl.get();
    curl_easy_setopt(h, CURLOPT_URL, request.url.c_str());
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, request.method.c_str());
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(settings.timeout.count()));
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &AppendBody);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &response.body);
    if (!request.body.empty()) {
      curl_easy_setopt(h, CURLOPT_POSTFIELDS, request.body.c_str());
      curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, static_cast<long>(request.body.size()));
    }
    if (settings.tls.enabled) {
      if (!settings.tls.ca_file.empty()) {
        curl_easy_setopt(h, CURLOPT_CAINFO, settings.tls.ca_file.c_str());
      }
      if (!settings.tls.client_cert_file.empty()) {
        curl_easy_setopt(h, CURLOPT_SSLCERT, settings.tls.client_cert_file.c_str());
        curl_easy_setopt(h, CURLOPT_SSLKEY, settings.tls.client_key_file.c_str());
      }
    }
    const CURLcode code = curl_easy_perform(h);
    if (code == CURLE_OPERATION_TIMEDOUT) {
      return absl::DeadlineExceededError(
          absl::StrCat(request.method, " ", request.url, " timed out"));
    }
    if (code != CURLE_OK) {
      return absl::UnavailableError(
          absl::StrCat(request.method, " ", request.url, " failed: ", curl_easy_strerror(code)));
    }
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &response.status);
    return response;
  };
}

// Maestro's error body: {"code": "maestro-6", "reason": "..."}.
std::string Reason(const std::string& body) {
  const nlohmann::json json = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (json.is_object() && json.contains("reason") && json["reason"].is_string()) {
    return absl::StrCat(json.value("code", std::string()), " ", json["reason"].get<std::string>());
  }
  return body.substr(0, 200);
}

absl::Status HttpError(const RestRequest& request, const RestResponse& response) {
  const std::string message = absl::StrCat(request.method, " ", request.url, " answered ",
                                           response.status, ": ", Reason(response.body));
  if (response.status >= 500 || response.status == 429) {
    return absl::UnavailableError(message);
  }
  return absl::FailedPreconditionError(message);
}

}  // namespace

MaestroConsumerRegistry::MaestroConsumerRegistry(MaestroRestSettings settings)
    : settings_(std::move(settings)), sender_(CurlSender(settings_)) {}

MaestroConsumerRegistry::MaestroConsumerRegistry(MaestroRestSettings settings, RestSender sender)
    : settings_(std::move(settings)), sender_(std::move(sender)) {}

std::string MaestroConsumerRegistry::ApiUrl(std::string_view path) const {
  std::string base = settings_.base_url;
  while (!base.empty() && base.back() == '/') {
    base.pop_back();
  }
  return absl::StrCat(base, "/api/maestro/v1", std::string(path));
}

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
  const RestRequest request{"POST", ApiUrl("/consumers"), std::move(json)};
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
  return HttpError(request, *response);
}

absl::StatusOr<bool> MaestroConsumerRegistry::ConsumerExists(std::string_view name) {
  if (!kube::IsDns1123Label(name)) {
    return false;
  }
  // search=name='<name>' with the quotes and spaces URL-encoded.
  const RestRequest request{
      "GET", ApiUrl(absl::StrCat("/consumers?size=1&search=name%3D%27", std::string(name), "%27")),
      ""};
  absl::StatusOr<RestResponse> response = sender_(request);
  if (!response.ok()) {
    return response.status();
  }
  if (response->status != 200) {
    return HttpError(request, *response);
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
