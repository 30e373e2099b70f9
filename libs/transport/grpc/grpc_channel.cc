#include "libs/transport/grpc/grpc_channel.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>

#include <climits>

#include "absl/strings/str_cat.h"
#include "libs/common/config.h"

namespace mmi::transport {
namespace {

int ClampToInt(int64_t value) { return static_cast<int>(std::min<int64_t>(value, INT_MAX)); }

absl::StatusOr<std::string> ReadPem(const std::string& path, std::string_view field) {
  absl::StatusOr<std::string> pem = config::ReadFile(path);
  if (!pem.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("transport.grpc.", std::string(field), ": cannot read \"", path,
                     "\": ", std::string(pem.status().message()), "; check the mounted secret"));
  }
  return pem;
}

}  // namespace

grpc::ChannelArguments GrpcChannelArguments(const GrpcSettings& settings) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(ClampToInt(static_cast<int64_t>(settings.max_receive_bytes)));
  args.SetMaxSendMessageSize(
      ClampToInt(static_cast<int64_t>(settings.limits.max_event_bytes) + 64 * 1024));
  if (settings.keep_alive_time.count() > 0) {
    args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, ClampToInt(settings.keep_alive_time.count()));
    args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, ClampToInt(settings.keep_alive_timeout.count()));
    // Maestro refuses pings without an active stream (§4.8); the Subscribe stream is always
    // open while we are healthy, so pings flow exactly when they are allowed.
    args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 0);
    args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  }
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS,
              ClampToInt(settings.reconnect_backoff.initial.count()));
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS,
              ClampToInt(settings.reconnect_backoff.initial.count()));
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS,
              ClampToInt(settings.reconnect_backoff.max.count()));
  return args;
}

absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeGrpcChannel(const GrpcSettings& settings) {
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  if (settings.tls.enabled) {
    grpc::SslCredentialsOptions options;
    if (!settings.tls.ca_file.empty()) {
      absl::StatusOr<std::string> ca = ReadPem(settings.tls.ca_file, "tls.caFile");
      if (!ca.ok()) {
        return ca.status();
      }
      options.pem_root_certs = *ca;
    }
    if (!settings.tls.client_cert_file.empty()) {
      absl::StatusOr<std::string> cert =
          ReadPem(settings.tls.client_cert_file, "tls.clientCertFile");
      if (!cert.ok()) {
        return cert.status();
      }
      absl::StatusOr<std::string> key = ReadPem(settings.tls.client_key_file, "tls.clientKeyFile");
      if (!key.ok()) {
        return key.status();
      }
      options.pem_cert_chain = *cert;
      options.pem_private_key = *key;
    }
    credentials = grpc::SslCredentials(options);
  } else {
    credentials = grpc::InsecureChannelCredentials();
  }
  return grpc::CreateCustomChannel(settings.url, credentials, GrpcChannelArguments(settings));
}

}  // namespace mmi::transport
