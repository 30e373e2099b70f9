#include "tests/support/http.h"

#include <curl/curl.h>

#include <memory>

#include "absl/strings/str_cat.h"

namespace mmi::testing {
namespace {

size_t Append(char* data, size_t size, size_t n, void* user) {
  static_cast<std::string*>(user)->append(data, size * n);
  return size * n;
}

struct CurlInit {
  CurlInit() { curl_global_init(CURL_GLOBAL_DEFAULT); }
};

}  // namespace

absl::StatusOr<HttpResponse> SendHttp(const HttpRequest& request) {
  static CurlInit init;
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) {
    return absl::InternalError("curl_easy_init failed");
  }
  HttpResponse response;
  curl_slist* headers = nullptr;
  for (const auto& [k, v] : request.headers) {
    headers = curl_slist_append(headers, absl::StrCat(k, ": ", v).c_str());
  }
  if (!request.bearer_token.empty()) {
    headers = curl_slist_append(headers, ("Authorization: Bearer " + request.bearer_token).c_str());
  }
  std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> header_guard(headers,
                                                                           curl_slist_free_all);
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, Append);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &response.body);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(request.timeout.count()));
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  if (!request.body.empty() || request.method == "POST" || request.method == "PUT" ||
      request.method == "PATCH") {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, request.body.c_str());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, static_cast<long>(request.body.size()));
  }
  if (!request.ca_file.empty()) {
    curl_easy_setopt(c, CURLOPT_CAINFO, request.ca_file.c_str());
  }
  if (!request.client_cert_file.empty()) {
    curl_easy_setopt(c, CURLOPT_SSLCERT, request.client_cert_file.c_str());
    curl_easy_setopt(c, CURLOPT_SSLKEY, request.client_key_file.c_str());
  }
  const CURLcode rc = curl_easy_perform(c);
  if (rc != CURLE_OK) {
    return absl::UnavailableError(
        absl::StrCat(request.method, " ", request.url, ": ", curl_easy_strerror(rc)));
  }
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &response.status);
  return response;
}

}  // namespace mmi::testing
