// HttpTransport on libcurl: TLS (CA, client certificate and key as files or in-memory PEM),
// HTTP/2 negotiated by ALPN (CURL_HTTP_VERSION_2TLS), gzip, TCP keep-alive.
//
// Connections: a pool of easy handles, each keeping its connection (and TLS session) alive
// between requests, so N threads calling Send() concurrently use up to N warm connections. A
// Stream() (watch) gets its own handle and connection, driven by a private multi handle so a stop
// request or a stall ends it at once instead of at the next byte.
#pragma once

#include <curl/curl.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "libs/common/clock.h"
#include "libs/kube/internal/http_transport.h"
#include "libs/kube/rest_config.h"

namespace mmi::kube::internal {

struct CurlTransportSettings {
  std::string server;  // "https://host:port"
  TlsConfig tls;
  std::string proxy_url;
  bool disable_compression = false;
  bool disable_http2 = false;  // force HTTP/1.1
  std::string user_agent = "mmi-kube/0.1";
  std::chrono::milliseconds connect_timeout{10'000};
  size_t max_idle_connections = 64;  // idle pooled handles kept; more are closed after use
};

class CurlTransport final : public HttpTransport {
 public:
  // kInvalidArgument for an unusable server URL; kFailedPrecondition when a CA, certificate or
  // key file does not exist.
  static absl::StatusOr<std::unique_ptr<CurlTransport>> Create(CurlTransportSettings settings,
                                                               const Clock& clock);
  ~CurlTransport() override;
  CurlTransport(const CurlTransport&) = delete;
  CurlTransport& operator=(const CurlTransport&) = delete;

  absl::StatusOr<HttpResponse> Send(const HttpRequest& request) override;
  absl::StatusOr<HttpResponse> Stream(const HttpRequest& request, const StreamOptions& options,
                                      const StreamDataHandler& on_data,
                                      std::stop_token stop) override;

 private:
  struct Exchange;  // per-request callback state

  CurlTransport(CurlTransportSettings settings, const Clock& clock, std::string url_base,
                std::string connect_to);
  // Sets every option of one request on `curl` (after curl_easy_reset).
  absl::Status Configure(CURL* curl, const HttpRequest& request, Exchange& exchange) const;
  CURL* AcquireHandle();
  void ReleaseHandle(CURL* curl);

  const CurlTransportSettings settings_;
  const Clock& clock_;
  const std::string url_base_;    // scheme://host:port used in URLs (host = tls.server_name)
  const std::string connect_to_;  // CURLOPT_CONNECT_TO entry when server_name is set
  absl::Mutex mu_;
  std::vector<CURL*> idle_ ABSL_GUARDED_BY(mu_);
};

}  // namespace mmi::kube::internal
