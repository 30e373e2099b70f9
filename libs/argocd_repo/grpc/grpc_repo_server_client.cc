#include "libs/argocd_repo/grpc/grpc_repo_server_client.h"

#include <google/protobuf/descriptor.h>
#include <grpcpp/client_context.h>
#include <grpcpp/completion_queue.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/security/tls_certificate_verifier.h>
#include <grpcpp/security/tls_credentials_options.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/channel_arguments.h>

#include <algorithm>
#include <climits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "libs/argocd_repo/internal/repo_server_protos.h"
#include "libs/argocd_repo/internal/status_mapping.h"
#include "libs/common/config.h"

namespace mmi::argocd_repo {
namespace {

using google::protobuf::Message;
using internal::RepoServerProtos;

int ClampToInt(int64_t value) { return static_cast<int>(std::clamp<int64_t>(value, 0, INT_MAX)); }

grpc::ChannelArguments ChannelArguments(const GrpcRepoServerSettings& settings) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(ClampToInt(static_cast<int64_t>(settings.max_message_bytes)));
  args.SetMaxSendMessageSize(ClampToInt(static_cast<int64_t>(settings.max_message_bytes)));
  if (settings.keep_alive_time.count() > 0) {
    args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, ClampToInt(settings.keep_alive_time.count()));
    args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, ClampToInt(settings.keep_alive_timeout.count()));
    // Argo CD's servers do not permit pings without a stream (keepalive.EnforcementPolicy
    // without PermitWithoutStream) and close the connection with "too_many_pings" otherwise.
    args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 0);
    args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  }
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS,
              ClampToInt(settings.reconnect_backoff_initial.count()));
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS,
              ClampToInt(settings.reconnect_backoff_initial.count()));
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS,
              ClampToInt(settings.reconnect_backoff_max.count()));
  if (settings.tls.enabled && !settings.tls.server_name.empty()) {
    args.SetSslTargetNameOverride(settings.tls.server_name);
  }
  return args;
}

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> Credentials(
    const GrpcRepoServerSettings::Tls& tls) {
  if (!tls.enabled) {
    return grpc::InsecureChannelCredentials();
  }
  if (tls.insecure_skip_verify) {
    grpc::experimental::TlsChannelCredentialsOptions options;
    options.set_verify_server_certs(false);
    options.set_check_call_host(false);
    options.set_certificate_verifier(
        std::make_shared<grpc::experimental::NoOpCertificateVerifier>());
    return grpc::experimental::TlsCredentials(options);
  }
  grpc::SslCredentialsOptions options;
  if (!tls.ca_file.empty()) {
    absl::StatusOr<std::string> ca = config::ReadFile(tls.ca_file);
    if (!ca.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("argocdRepoServer.tls.caFile: cannot read \"", tls.ca_file,
                       "\": ", ca.status().message()));
    }
    options.pem_root_certs = *std::move(ca);
  }
  return grpc::SslCredentials(options);
}

std::string StringField(const Message& message, const char* field) {
  const google::protobuf::FieldDescriptor* descriptor =
      message.GetDescriptor()->FindFieldByName(field);
  return message.GetReflection()->GetString(message, descriptor);
}

// "<repoURL> path <path> at "<revision>"", for messages; `source` and `revision` are JSON pointers
// into the request.
std::string Describe(const nlohmann::json& body, const char* source, const char* revision) {
  auto text = [&body](const std::string& pointer) {
    const nlohmann::json::json_pointer p(pointer);
    return body.contains(p) && body.at(p).is_string() ? body.at(p).get<std::string>()
                                                      : std::string();
  };
  std::string out = text("/repo/repo");
  if (std::string path = text(absl::StrCat(source, "/path")); !path.empty()) {
    absl::StrAppend(&out, " path ", path);
  }
  if (std::string chart = text(absl::StrCat(source, "/chart")); !chart.empty()) {
    absl::StrAppend(&out, " chart ", chart);
  }
  absl::StrAppend(&out, " at \"", text(revision), "\"");
  return out;
}

}  // namespace

absl::StatusOr<std::unique_ptr<GrpcRepoServerClient>> GrpcRepoServerClient::Create(
    const GrpcRepoServerSettings& settings, RepoServerMetrics& metrics) {
  if (settings.address.empty()) {
    return absl::InvalidArgumentError("argocdRepoServer.address: required (host:port)");
  }
  if (settings.timeout.count() <= 0) {
    return absl::InvalidArgumentError("argocdRepoServer.timeout: must be positive");
  }
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials = Credentials(settings.tls);
  if (!credentials.ok()) {
    return credentials.status();
  }
  RepoServerProtos::Get();  // loads the descriptors now: a broken build fails at startup
  std::shared_ptr<grpc::Channel> channel =
      grpc::CreateCustomChannel(settings.address, *credentials, ChannelArguments(settings));
  return std::unique_ptr<GrpcRepoServerClient>(
      new GrpcRepoServerClient(settings, metrics, std::move(channel)));
}

GrpcRepoServerClient::GrpcRepoServerClient(const GrpcRepoServerSettings& settings,
                                           RepoServerMetrics& metrics,
                                           std::shared_ptr<grpc::Channel> channel)
    : settings_(settings), metrics_(metrics), channel_(std::move(channel)), stub_(channel_) {}

absl::StatusOr<std::string> GrpcRepoServerClient::Call(std::string_view method,
                                                       const std::string& request,
                                                       std::string_view what) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + settings_.timeout);
  grpc::Slice slice(request);
  grpc::ByteBuffer request_buffer(&slice, 1);
  // A completion queue per call, as a blocking generated stub does: calls never wait on each
  // other, and no callback-API thread is involved.
  grpc::CompletionQueue queue;
  std::unique_ptr<grpc::GenericClientAsyncResponseReader> call = stub_.PrepareUnaryCall(
      &context, RepoServerProtos::Get().MethodPath(method), request_buffer, &queue);
  call->StartCall();
  grpc::ByteBuffer response_buffer;
  grpc::Status status;
  int tag = 0;
  call->Finish(&response_buffer, &status, &tag);
  void* got_tag = nullptr;
  bool ok = false;
  const bool delivered = queue.Next(&got_tag, &ok);
  queue.Shutdown();
  void* drained_tag = nullptr;
  bool drained_ok = false;
  while (queue.Next(&drained_tag, &drained_ok)) {
  }
  if (!delivered || got_tag != &tag) {
    return absl::InternalError(absl::StrCat("argocd-repo-server ", std::string(method), " of ",
                                            std::string(what), ": the call's completion was lost"));
  }
  if (!status.ok()) {
    return internal::FromRepoServerStatus(status, method, what);
  }
  std::vector<grpc::Slice> slices;
  if (!response_buffer.Dump(&slices).ok()) {
    return absl::InternalError(absl::StrCat("argocd-repo-server ", std::string(method), " of ",
                                            std::string(what), ": unreadable response"));
  }
  std::string response;
  response.reserve(response_buffer.Length());
  for (const grpc::Slice& part : slices) {
    response.append(reinterpret_cast<const char*>(part.begin()), part.size());
  }
  return response;
}

absl::StatusOr<std::unique_ptr<Message>> GrpcRepoServerClient::Unary(
    RepoServerOperation operation, std::string_view method, std::string_view request_type,
    std::string_view response_type, const nlohmann::json& body, const std::string& what) {
  const auto started = std::chrono::steady_clock::now();
  absl::StatusOr<std::unique_ptr<Message>> response =
      [&]() -> absl::StatusOr<std::unique_ptr<Message>> {
    const RepoServerProtos& protos = RepoServerProtos::Get();
    absl::StatusOr<std::unique_ptr<Message>> request = protos.FromJson(request_type, body);
    if (!request.ok()) {
      return request.status();
    }
    absl::StatusOr<std::string> bytes = Call(method, (*request)->SerializeAsString(), what);
    if (!bytes.ok()) {
      return bytes.status();
    }
    std::unique_ptr<Message> message = protos.New(response_type);
    if (!message->ParseFromString(*bytes)) {
      return absl::InternalError(absl::StrCat("argocd-repo-server ", std::string(method), " of ",
                                              what, ": the response does not parse"));
    }
    return message;
  }();
  metrics_.RecordCall(operation, response.status(), std::chrono::steady_clock::now() - started);
  return response;
}

absl::StatusOr<ResolvedRevision> GrpcRepoServerClient::ResolveRevision(
    const ResolveRevisionRequest& request) {
  absl::StatusOr<std::unique_ptr<Message>> response =
      Unary(RepoServerOperation::kResolveRevision, "ResolveRevision",
            "repository.ResolveRevisionRequest", "repository.ResolveRevisionResponse", request.body,
            Describe(request.body, "/app/spec/source", "/ambiguousRevision"));
  if (!response.ok()) {
    return response.status();
  }
  return ResolvedRevision{.revision = StringField(**response, "revision"),
                          .ambiguous_revision = StringField(**response, "ambiguousRevision")};
}

absl::StatusOr<RenderedManifests> GrpcRepoServerClient::GenerateManifest(
    const ManifestRequest& request) {
  absl::StatusOr<std::unique_ptr<Message>> response =
      Unary(RepoServerOperation::kGenerateManifest, "GenerateManifest",
            "repository.ManifestRequest", "repository.ManifestResponse", request.body,
            Describe(request.body, "/applicationSource", "/revision"));
  if (!response.ok()) {
    return response.status();
  }
  const Message& message = **response;
  RenderedManifests rendered;
  const google::protobuf::FieldDescriptor* manifests =
      message.GetDescriptor()->FindFieldByName("manifests");
  const int count = message.GetReflection()->FieldSize(message, manifests);
  rendered.manifests.reserve(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    rendered.manifests.push_back(message.GetReflection()->GetRepeatedString(message, manifests, i));
  }
  rendered.revision = StringField(message, "revision");
  rendered.source_type = StringField(message, "sourceType");
  return rendered;
}

}  // namespace mmi::argocd_repo
