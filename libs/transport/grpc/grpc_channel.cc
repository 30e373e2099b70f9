#include "libs/transport/grpc/grpc_channel.h"

#include <grpc/support/log.h>
#include <grpcpp/client_context.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>

#include <chrono>
#include <climits>

#include "absl/strings/str_cat.h"
#include "google/protobuf/empty.pb.h"
#include "libs/common/config.h"
#include "libs/common/log.h"
#include "proto/cloudevent.grpc.pb.h"

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

void ForwardGrpcCoreLog(gpr_log_func_args* args) {
  static const log::Logger logger("grpc.core");
  if (!logger.Enabled(log::Level::kDebug)) {
    return;
  }
  logger.Debug(args->message != nullptr ? args->message : "",
               {{"file", args->file != nullptr ? args->file : ""},
                {"line", args->line},
                {"severity", gpr_log_severity_string(args->severity)}});
}

}  // namespace

void RouteGrpcCoreLogs() {
  static const bool routed = [] {
    gpr_set_log_function(&ForwardGrpcCoreLog);
    return true;
  }();
  (void)routed;
}

// gRPC 1.51 (Debian 12) completes callback-API calls (our publisher, the test brokers) on one
// process-wide "alternative" completion queue, created with the first channel or server that uses
// the callback API and shut down when the last one is destroyed. That shutdown races with calls
// still completing on its threads: ASan reports a double free in grpc_cq_internal_unref (seen in
// ~9% of transport_grpc_test runs under load, which create and destroy channels and servers; a
// dispatcher that replaces its channel could hit it too). A channel that lives as long as the
// process and has made one callback call holds a reference, so the queue is never shut down.
void PinGrpcCallbackCompletionQueue() {
  struct Pin {
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<io::cloudevents::v1::CloudEventService::Stub> stub;
    grpc::ClientContext context;
    io::cloudevents::v1::PublishRequest request;
    google::protobuf::Empty response;
  };
  // A function-local static: initialized once, thread-safe; never destroyed, and reachable, so
  // not a leak for LSan.
  [[maybe_unused]] static Pin* const pin = [] {
    auto* p = new Pin;
    p->channel =
        grpc::CreateChannel("unix:/nonexistent/mmi-grpc-pin", grpc::InsecureChannelCredentials());
    p->stub = io::cloudevents::v1::CloudEventService::NewStub(p->channel);
    p->context.set_deadline(std::chrono::system_clock::now());  // fails at once, locally
    p->stub->async()->Publish(&p->context, &p->request, &p->response, [](const grpc::Status&) {});
    return p;
  }();
}

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
  // Never idle unless asked: an idle channel drops its connection, and later gRPC releases
  // enable that after 30 min by default. The publisher wakes an idle channel either way.
  args.SetInt(GRPC_ARG_CLIENT_IDLE_TIMEOUT_MS, settings.idle_timeout.count() > 0
                                                   ? ClampToInt(settings.idle_timeout.count())
                                                   : INT_MAX);
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
  PinGrpcCallbackCompletionQueue();
  RouteGrpcCoreLogs();
  return grpc::CreateCustomChannel(settings.url, credentials, GrpcChannelArguments(settings));
}

}  // namespace mmi::transport
