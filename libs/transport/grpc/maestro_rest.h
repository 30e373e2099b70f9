// Maestro's REST API (maestro-protocol.md §7.2): the settings, one HTTP exchange (libcurl, or a
// test's sender) and the error mapping shared by every REST client in this folder
// (MaestroConsumerRegistry, MaestroResourceBundles). One HTTP stack: libcurl, one easy handle per
// request.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "libs/transport/settings.h"

namespace mmi::transport {

struct MaestroRestSettings {
  // (url) Maestro's REST base URL (Service `maestro`, port 8000), without the API path.
  std::string base_url = "http://maestro.maestro.svc.cluster.local:8000";
  TlsSettings tls{};           // (tls) for an https:// base URL
  std::string bearer_token{};  // (token) optional `authorization: Bearer` header; never logged
  std::chrono::milliseconds timeout{10'000};  // (timeout) per request
};

// One HTTP exchange, so that tests can replace libcurl.
struct RestRequest {
  std::string method;
  std::string url;
  std::string body;  // JSON, may be empty
};
struct RestResponse {
  long status = 0;
  std::string body;
};
// kUnavailable / kDeadlineExceeded when the exchange itself failed; any HTTP status is a
// response.
using RestSender = std::function<absl::StatusOr<RestResponse>(const RestRequest&)>;

// The libcurl sender: blocking, thread-safe (one easy handle per request).
RestSender MakeCurlRestSender(const MaestroRestSettings& settings);

// `<base_url>/api/maestro/v1<path>` (trailing slashes of the base dropped).
std::string MaestroApiUrl(const MaestroRestSettings& settings, std::string_view path);

// An unexpected answer as a Status: kUnavailable for 5xx and 429 (retry), kFailedPrecondition
// for other statuses; the message names the request and Maestro's `code` and `reason`.
absl::Status MaestroHttpError(const RestRequest& request, const RestResponse& response);

}  // namespace mmi::transport
