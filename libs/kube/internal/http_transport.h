// The HTTP layer under HttpKubeClient, small enough to fake: unit tests of the client (error
// mapping, retries, rate limiting, auth, watch decoding) run against a scripted transport, and
// CurlTransport (curl_transport.h) is the real one.
#pragma once

#include <chrono>
#include <functional>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace mmi::kube::internal {

struct HttpRequest {
  std::string method;  // GET, POST, PUT, PATCH, DELETE
  std::string path;    // path and query, starting with '/'
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::chrono::milliseconds timeout{0};  // whole request; 0 = none
};

struct HttpResponse {
  long status = 0;
  std::string body;
  std::string retry_after;            // Retry-After header value, "" when absent
  std::vector<std::string> warnings;  // Warning headers
  int http_version = 0;               // 1 or 2
};

struct StreamOptions {
  // No body byte for this long ends the stream with kDeadlineExceeded; 0 = never.
  std::chrono::milliseconds stall_timeout{0};
  // The stream may not last longer than this; 0 = no limit.
  std::chrono::milliseconds max_duration{0};
};

// Receives the body of a 2xx streamed response as it arrives; return false to end the stream.
using StreamDataHandler = std::function<bool(std::string_view chunk)>;

// Thread-safe: concurrent calls from several threads are allowed.
class HttpTransport {
 public:
  virtual ~HttpTransport() = default;

  // One request/response. Any HTTP status is a response; errors are transport failures only:
  // kUnavailable (connect, TLS, reset), kDeadlineExceeded (request.timeout).
  virtual absl::StatusOr<HttpResponse> Send(const HttpRequest& request) = 0;

  // A streamed response. For a 2xx status the body goes to `on_data` (HttpResponse::body stays
  // empty); otherwise the body is collected into the returned response. Returns the response
  // when the server ended the stream or `on_data` returned false; kCancelled when `stop` was
  // requested; kDeadlineExceeded on a stall; kUnavailable when the connection broke.
  virtual absl::StatusOr<HttpResponse> Stream(const HttpRequest& request,
                                              const StreamOptions& options,
                                              const StreamDataHandler& on_data,
                                              std::stop_token stop) = 0;
};

}  // namespace mmi::kube::internal
