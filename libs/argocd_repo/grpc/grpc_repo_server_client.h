// GrpcRepoServerClient: RepoServerClient over gRPC to argocd-repo-server, with dynamic messages
// from the descriptor set of the pinned Argo CD (internal/repo_server_protos.h) and
// grpc::GenericStub: no generated C++ for Argo CD's protos.
#pragma once

#include <google/protobuf/message.h>
#include <grpcpp/channel.h>
#include <grpcpp/generic/generic_stub.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "libs/argocd_repo/metrics.h"
#include "libs/argocd_repo/repo_server_client.h"

namespace mmi::argocd_repo {

struct GrpcRepoServerSettings {
  // host:port of argocd-repo-server's gRPC port (Argo CD's --repo-server), e.g.
  // "argocd-repo-server.openshift-gitops.svc:8081". Required.
  std::string address;

  struct Tls {
    // Argo CD's repo-server serves TLS unless started with --disable-tls (then false here, as
    // the controller's --repo-server-plaintext). Default true.
    bool enabled = true;
    // PEM CA bundle to verify the repo-server's certificate against ("" = system roots); Argo
    // CD's argocd-repo-server-tls Secret holds its certificate and CA.
    std::string ca_file;
    // Do not verify the server's certificate at all, as Argo CD's controller does unless
    // --repo-server-strict-tls (the repo-server's default certificate is self-signed, made at
    // start). Default false: verify.
    bool insecure_skip_verify = false;
    // The name to check the certificate against ("" = the host of `address`).
    std::string server_name;
  } tls;

  // Deadline of each call, as the controller's --repo-server-timeout-seconds (default 60 s).
  std::chrono::milliseconds timeout{std::chrono::seconds(60)};
  // HTTP/2 keep-alive pings while a call is in flight: Argo CD's servers allow one per 10 s
  // (ARGOCD_GRPC_KEEP_ALIVE_MIN) and its clients ping every 20 s; 0 = off.
  std::chrono::milliseconds keep_alive_time{std::chrono::seconds(20)};
  std::chrono::milliseconds keep_alive_timeout{std::chrono::seconds(20)};
  // Largest response accepted: Argo CD's ARGOCD_GRPC_MAX_SIZE_MB default, 200 MiB.
  size_t max_message_bytes = size_t{200} << 20;
  // The channel's reconnect backoff after the connection is lost (gRPC's own is up to 120 s):
  // a call fails with kUnavailable until the channel is connected again.
  std::chrono::milliseconds reconnect_backoff_initial{std::chrono::seconds(1)};
  std::chrono::milliseconds reconnect_backoff_max{std::chrono::seconds(10)};
};

// Thread-safe; owns one lazily-connecting channel, which reconnects by itself. Calls block their
// caller (repo_server_client.h).
class GrpcRepoServerClient final : public RepoServerClient {
 public:
  // kInvalidArgument naming the field when `settings` are wrong (no address, a zero timeout);
  // kFailedPrecondition naming tls.caFile when it cannot be read. Does not connect. `metrics`
  // is borrowed and must outlive the client.
  static absl::StatusOr<std::unique_ptr<GrpcRepoServerClient>> Create(
      const GrpcRepoServerSettings& settings, RepoServerMetrics& metrics);

  absl::StatusOr<ResolvedRevision> ResolveRevision(const ResolveRevisionRequest& request) override;
  absl::StatusOr<RenderedManifests> GenerateManifest(const ManifestRequest& request) override;

 private:
  GrpcRepoServerClient(const GrpcRepoServerSettings& settings, RepoServerMetrics& metrics,
                       std::shared_ptr<grpc::Channel> channel);

  // One unary call of `method` with `request`; the serialized response.
  absl::StatusOr<std::string> Call(std::string_view method, const std::string& request,
                                   std::string_view what);
  // `body` as a `request_type` message, the call, and its `response_type` message; `what` names
  // the source in error messages.
  absl::StatusOr<std::unique_ptr<google::protobuf::Message>> Unary(
      RepoServerOperation operation, std::string_view method, std::string_view request_type,
      std::string_view response_type, const nlohmann::json& body, const std::string& what);

  const GrpcRepoServerSettings settings_;
  RepoServerMetrics& metrics_;
  std::shared_ptr<grpc::Channel> channel_;
  grpc::GenericStub stub_;
};

}  // namespace mmi::argocd_repo
