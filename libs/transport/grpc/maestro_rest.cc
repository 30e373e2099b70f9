#include "libs/transport/grpc/maestro_rest.h"

#include <curl/curl.h>

#include <memory>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace mmi::transport {
namespace {

size_t AppendBody(char* data, size_t size, size_t count, void* out) {
  static_cast<std::string*>(out)->append(data, size * count);
  return size * count;
}

// Maestro's error body: {"code": "maestro-6", "reason": "..."}.
std::string Reason(const std::string& body) {
  const nlohmann::json json = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (json.is_object() && json.contains("reason") && json["reason"].is_string()) {
    return absl::StrCat(json.value("code", std::string()), " ", json["reason"].get<std::string>());
  }
  return body.substr(0, 200);
}

}  // namespace

// libcurl: one easy handle per request (thread-safe once curl_global_init ran, which the first
// curl_easy_init does implicitly on Linux/OpenSSL builds).
RestSender MakeCurlRestSender(const MaestroRestSettings& settings) {
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

std::string MaestroApiUrl(const MaestroRestSettings& settings, std::string_view path) {
  std::string base = settings.base_url;
  while (!base.empty() && base.back() == '/') {
    base.pop_back();
  }
  return absl::StrCat(base, "/api/maestro/v1", std::string(path));
}

absl::Status MaestroHttpError(const RestRequest& request, const RestResponse& response) {
  const std::string message = absl::StrCat(request.method, " ", request.url, " answered ",
                                           response.status, ": ", Reason(response.body));
  if (response.status >= 500 || response.status == 429) {
    return absl::UnavailableError(message);
  }
  return absl::FailedPreconditionError(message);
}

}  // namespace mmi::transport
