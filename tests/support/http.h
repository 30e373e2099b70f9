// A blocking HTTP(S) client for tests only (libcurl): talks to peers' REST APIs (kube-apiserver,
// Maestro, Prometheus) in smoke tests. Services use libs/kube and friends instead.
#pragma once

#include <chrono>
#include <map>
#include <string>

#include "absl/status/statusor.h"

namespace mmi::testing {

struct HttpRequest {
  std::string method = "GET";
  std::string url;
  std::string body;
  std::map<std::string, std::string> headers;
  // TLS: CA bundle to verify the server, optional client certificate and key (files).
  std::string ca_file;
  std::string client_cert_file;
  std::string client_key_file;
  std::string bearer_token;
  std::chrono::milliseconds timeout{10'000};
};

struct HttpResponse {
  long status = 0;
  std::string body;
};

// kUnavailable when the connection fails; any HTTP status is a successful response.
absl::StatusOr<HttpResponse> SendHttp(const HttpRequest& request);

inline absl::StatusOr<HttpResponse> HttpGet(const std::string& url) {
  HttpRequest r;
  r.url = url;
  return SendHttp(r);
}

}  // namespace mmi::testing
