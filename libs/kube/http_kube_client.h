// HttpKubeClient: KubeClient over HTTPS (libcurl, HTTP/2 by ALPN) with client-side rate limiting,
// retries that honour Retry-After (API Priority and Fairness), token-file rotation and
// controller-runtime-style request metrics.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "libs/common/backoff.h"
#include "libs/common/clock.h"
#include "libs/common/sleeper.h"
#include "libs/kube/internal/client_metrics.h"
#include "libs/kube/internal/http_transport.h"
#include "libs/kube/internal/token_source.h"
#include "libs/kube/kube_client.h"
#include "libs/kube/rate_limiter.h"
#include "libs/kube/rest_config.h"

namespace prometheus {
class Registry;
}

namespace mmi::kube {

struct RetrySettings {
  // Extra attempts after a 429, or a 5xx that carries Retry-After (any verb: the server did not
  // act on it), or a 5xx / connection failure of a GET. Each retry passes the rate limiter
  // again. 0 disables retries.
  int max_retries = 10;
  // Delay between attempts: the larger of this backoff and the server's Retry-After.
  BackoffSettings backoff{.initial = std::chrono::milliseconds(250),
                          .max = std::chrono::milliseconds(10'000),
                          .multiplier = 2.0,
                          .jitter = 0.2};
  std::chrono::seconds max_retry_after{60};  // cap on a server-sent Retry-After
};

struct HttpKubeClientSettings {
  RestConfig rest;
  RateLimitSettings rate_limit;  // qps <= 0 disables the client-side limiter
  RetrySettings retry;
  std::chrono::milliseconds request_timeout{60'000};  // Get/Create/Update/Patch/Delete
  std::chrono::milliseconds list_timeout{600'000};    // one List page (or an unpaged list)
  std::chrono::seconds token_refresh_period{60};      // re-read rest.bearer_token_file
  bool disable_http2 = false;                         // force HTTP/1.1
  size_t max_idle_connections = 64;                   // pooled keep-alive connections
};

// Thread-safe (see KubeClient). Watches run on the caller's thread, each on its own connection.
class HttpKubeClient final : public KubeClient {
 public:
  // The production client on libcurl. `clock`, `sleeper` and `registry` (nullable: no metrics)
  // must outlive the client. Fails when the server URL is unusable or a TLS file is missing.
  static absl::StatusOr<std::unique_ptr<HttpKubeClient>> Create(HttpKubeClientSettings settings,
                                                                const Clock& clock,
                                                                Sleeper& sleeper,
                                                                prometheus::Registry* registry);
  // Any transport (unit tests pass a scripted one).
  HttpKubeClient(std::unique_ptr<internal::HttpTransport> transport,
                 HttpKubeClientSettings settings, const Clock& clock, Sleeper& sleeper,
                 prometheus::Registry* registry);

  absl::StatusOr<nlohmann::json> Get(const ResourceRef& ref, std::string_view name) override;
  absl::StatusOr<ListResult> List(const ResourceRef& ref, const ListOptions& options) override;
  absl::StatusOr<nlohmann::json> Create(const ResourceRef& ref, const nlohmann::json& object,
                                        const WriteOptions& options) override;
  absl::StatusOr<nlohmann::json> Update(const ResourceRef& ref, const nlohmann::json& object,
                                        const WriteOptions& options) override;
  absl::StatusOr<nlohmann::json> Patch(const ResourceRef& ref, std::string_view name,
                                       PatchType type, const nlohmann::json& patch,
                                       const PatchOptions& options,
                                       std::string_view subresource) override;
  absl::Status Delete(const ResourceRef& ref, std::string_view name,
                      const DeleteOptions& options) override;
  absl::Status Watch(const ResourceRef& ref, const WatchOptions& options,
                     const WatchHandler& handler, std::stop_token stop) override;

 private:
  // Sends with rate limiting, auth and retries; returns the final response (any status).
  absl::StatusOr<internal::HttpResponse> Execute(internal::HttpRequest request);
  // Adds Accept, auth and impersonation headers.
  absl::Status AddCommonHeaders(internal::HttpRequest& request);
  absl::StatusOr<nlohmann::json> JsonCall(std::string method, std::string path,
                                          std::string content_type, std::string body,
                                          std::chrono::milliseconds timeout);
  void WaitForRateLimit();
  void LogWarnings(const internal::HttpResponse& response);
  uint64_t NextSeed();

  const std::unique_ptr<internal::HttpTransport> transport_;
  const HttpKubeClientSettings settings_;
  const Clock& clock_;
  Sleeper& sleeper_;
  TokenBucketRateLimiter limiter_;
  internal::TokenSource token_;
  internal::ClientMetrics metrics_;
  std::atomic<uint64_t> seed_{0x9e3779b97f4a7c15ULL};
  absl::Mutex warnings_mu_;
  absl::flat_hash_set<std::string> warnings_seen_ ABSL_GUARDED_BY(warnings_mu_);
};

}  // namespace mmi::kube
