#include "libs/transport/grpc/internal/credentials.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "libs/common/config.h"

namespace mmi::transport::internal {
namespace {

std::string_view Hint(Refusal refusal) {
  switch (refusal) {
    case Refusal::kAuthentication:
      return "Maestro did not accept our identity: check transport.grpc.token / tokenFile (a "
             "service-account token the hub's TokenReview accepts) or the client certificate's "
             "CN and O";
    case Refusal::kAuthorization:
      return "Maestro's SubjectAccessReview refused us: grant verbs pub and sub on the "
             "non-resource URL /sources/<sourceId> to our user or group (RBAC on the hub)";
    case Refusal::kTls:
      return "the TLS handshake failed or the connection was closed right after it: check "
             "transport.tls.caFile (Maestro's CA) and the client certificate (signed by a CA in "
             "Maestro's --grpc-client-ca-file); gRPC's own debug log names the TLS alert";
    case Refusal::kNone:
      break;
  }
  return "";
}

}  // namespace

Refusal ClassifyRefusal(const grpc::Status& status, bool tls) {
  const std::string& text = status.error_message();
  switch (status.error_code()) {
    case grpc::StatusCode::UNAUTHENTICATED:
      return Refusal::kAuthentication;
    case grpc::StatusCode::PERMISSION_DENIED:
      return Refusal::kAuthorization;
    case grpc::StatusCode::UNKNOWN:
      if (absl::StrContains(text, "token not authenticated")) {
        return Refusal::kAuthentication;
      }
      if (absl::StrContains(text, "unauthorized to publish") ||
          absl::StrContains(text, "unauthorized to subscribe") ||
          absl::StrContains(text, "failed to authorize the request")) {
        return Refusal::kAuthorization;
      }
      return Refusal::kNone;
    case grpc::StatusCode::UNAVAILABLE:
      // gRPC core's texts for a failed handshake: "Ssl handshake failed: SSL_ERROR_SSL: ...",
      // "TLS handshake failed", "...CERTIFICATE_VERIFY_FAILED", "...ALERT_BAD_CERTIFICATE",
      // "...CERTIFICATE_REQUIRED".
      if (const std::string lower = absl::AsciiStrToLower(text);
          absl::StrContains(lower, "handshake failed") || absl::StrContains(lower, "certificate") ||
          (tls && absl::StrContains(lower, "endpoint read failed"))) {
        return Refusal::kTls;
      }
      return Refusal::kNone;
    default:
      return Refusal::kNone;
  }
}

void RefusalLog::Refused(Refusal refusal, const grpc::Status& status) {
  metrics_.RecordAuthFailure();
  if (refused_.exchange(true)) {
    return;
  }
  logger_.Error(
      "Maestro refused our credentials; retrying, this is logged once until they are "
      "accepted (mmi_transport_auth_failures_total counts every refusal)",
      {{"client", client_},
       {"code", static_cast<int>(status.error_code())},
       {"error", status.error_message()},
       {"check", std::string(Hint(refusal))}});
}

void RefusalLog::Accepted() {
  if (refused_.exchange(false)) {
    logger_.Info("Maestro accepts our credentials again", {{"client", client_}});
  }
}

BearerToken::BearerToken(const GrpcSettings& settings, Clock& clock, std::chrono::seconds refresh)
    : fixed_(settings.bearer_token), file_(settings.token_file), clock_(clock), refresh_(refresh) {}

absl::Status BearerToken::Load() {
  if (file_.empty()) {
    return absl::OkStatus();
  }
  absl::StatusOr<std::string> text = config::ReadFile(file_);
  if (!text.ok()) {
    return absl::FailedPreconditionError(absl::StrCat("transport.grpc.tokenFile: cannot read \"",
                                                      file_, "\": ", text.status().message(),
                                                      "; check the mounted token"));
  }
  absl::MutexLock lock(&mu_);
  token_ = std::string(absl::StripAsciiWhitespace(*text));
  read_at_ = clock_.MonotonicNow();
  stale_ = false;
  return absl::OkStatus();
}

void BearerToken::Apply(grpc::ClientContext& context) {
  if (const std::string token = Get(); !token.empty()) {
    context.AddMetadata("authorization", absl::StrCat("Bearer ", token));
  }
}

std::string BearerToken::Get() {
  if (!fixed_.empty() || file_.empty()) {
    return fixed_;
  }
  {
    absl::MutexLock lock(&mu_);
    const auto now = clock_.MonotonicNow();
    if (stale_ || now - read_at_ >= refresh_) {
      // Read under the lock: a small file, at most once a minute or once per refusal.
      absl::StatusOr<std::string> text = config::ReadFile(file_);
      read_at_ = now;
      stale_ = false;
      if (text.ok()) {
        token_ = std::string(absl::StripAsciiWhitespace(*text));
        read_failing_ = false;
      } else if (!read_failing_) {
        read_failing_ = true;
        log::Logger("transport.grpc")
            .Warn("cannot re-read transport.grpc.tokenFile; keeping the last token",
                  {{"file", file_}, {"error", std::string(text.status().message())}});
      }
    }
    return token_;
  }
}

void BearerToken::Invalidate() {
  absl::MutexLock lock(&mu_);
  stale_ = true;
}

}  // namespace mmi::transport::internal
