// Credentials on Maestro's gRPC source API (maestro-protocol.md §4.7): telling a refusal of our
// credentials apart from an unreachable server, logging it once per outage, and the bearer token
// read from a file that rotates.
#pragma once

#include <grpcpp/client_context.h>
#include <grpcpp/support/status.h>

#include <atomic>
#include <chrono>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "libs/common/clock.h"
#include "libs/common/log.h"
#include "libs/transport/metrics.h"
#include "libs/transport/settings.h"

namespace mmi::transport::internal {

// How the pinned Maestro server refuses credentials (cmd/maestro/server/auth_interceptor.go,
// grpc_server.go; only with TLS on, --grpc-authn-type mtls or token):
//   kAuthentication: UNAUTHENTICATED (no token: "invalid token"; a certificate without CN or O),
//     UNKNOWN "token not authenticated" (its TokenReview said no; a plain Go error, so UNKNOWN);
//   kAuthorization: PERMISSION_DENIED, UNKNOWN "unauthorized to publish/subscribe ..." (its
//     SubjectAccessReview said no) or "failed to authorize the request" (the review failed);
//   kTls: UNAVAILABLE from a failed TLS handshake. Our caFile not trusting the server's
//     certificate reads "handshake failed" / "certificate". The server refusing our certificate
//     (not signed by its --grpc-client-ca-file, or none sent) does not say so in the status: in
//     TLS 1.3 the client's side of the handshake is done before the server checks the client's
//     certificate, so its alert ("tlsv1 alert unknown ca", in gRPC core's own log only) arrives
//     as the first read and the call fails with "...: Endpoint read failed". With `tls` on, that
//     text counts as a refusal too (a server that resets every connection right after the
//     handshake would look the same).
enum class Refusal { kNone, kAuthentication, kAuthorization, kTls };
Refusal ClassifyRefusal(const grpc::Status& status, bool tls);

// Counts every refusal in mmi_transport_auth_failures_total{client} and logs the first one of an
// outage at error level, naming what to check; later ones until Accepted() are counted only, so
// a client retrying every few seconds does not flood the log. Accepted() after a refusal logs
// once that the credentials are accepted again. Thread-safe.
class RefusalLog {
 public:
  RefusalLog(const log::Logger& logger, TransportMetrics& metrics, std::string client)
      : logger_(logger), metrics_(metrics), client_(std::move(client)) {}

  void Refused(Refusal refusal, const grpc::Status& status);
  void Accepted();
  bool refused() const { return refused_.load(); }

 private:
  const log::Logger& logger_;
  TransportMetrics& metrics_;
  const std::string client_;
  std::atomic<bool> refused_{false};
};

// The bearer token: GrpcSettings::bearer_token, or the content of token_file (surrounding
// whitespace trimmed) read by Load(), again when older than `refresh` and after Invalidate()
// (Maestro refused it). A later read that fails keeps the last token and logs a warning once
// per failure streak. Thread-safe.
class BearerToken {
 public:
  BearerToken(const GrpcSettings& settings, Clock& clock,
              std::chrono::seconds refresh = std::chrono::seconds(60));

  // The first read of token_file: kFailedPrecondition naming transport.grpc.tokenFile.
  absl::Status Load();
  // The token to send now ("" = none), re-reading token_file when due.
  std::string Get();
  // Adds `authorization: Bearer <token>` to `context` when there is a token.
  void Apply(grpc::ClientContext& context);
  void Invalidate();

 private:
  const std::string fixed_;
  const std::string file_;
  Clock& clock_;
  const std::chrono::seconds refresh_;
  absl::Mutex mu_;
  std::string token_ ABSL_GUARDED_BY(mu_);
  std::chrono::steady_clock::time_point read_at_ ABSL_GUARDED_BY(mu_);
  bool stale_ ABSL_GUARDED_BY(mu_) = false;
  bool read_failing_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace mmi::transport::internal
