// RepoServerClient: renders an Argo CD Application source through Argo CD's own repo-server
// (repository.RepoServerService in reposerver/repository/repository.proto of the pinned Argo CD:
// ResolveRevision and GenerateManifest), for manifest delivery (issue 38, "Rendering by the real
// repo-server").
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace mmi::argocd_repo {

// A repository.ManifestRequest in protobuf's JSON form (field names as in repository.proto and
// Argo CD's v1alpha1/generated.proto: `repo`, `applicationSource`, `kubeVersion`, ...). Built by
// BuildManifestRequest (request_builder.h) the way Argo CD's application-controller builds it.
// Two equal requests render the same manifests: Key() is the deduplication key.
struct ManifestRequest {
  nlohmann::json body = nlohmann::json::object();

  // The canonical text of `body` (object keys sorted): equal requests, equal keys.
  std::string Key() const { return body.dump(); }
  bool operator==(const ManifestRequest& other) const { return body == other.body; }
};

// A repository.ResolveRevisionRequest in protobuf's JSON form (`repo`, `app`, `ambiguousRevision`,
// `sourceIndex`). Built by BuildResolveRevisionRequest (request_builder.h).
struct ResolveRevisionRequest {
  nlohmann::json body = nlohmann::json::object();

  std::string Key() const { return body.dump(); }
  bool operator==(const ResolveRevisionRequest& other) const { return body == other.body; }
};

// What GenerateManifest rendered (repository.ManifestResponse).
struct RenderedManifests {
  // One Kubernetes object each, as JSON text, in the repo-server's order. With Argo CD's default
  // tracking method (annotation) each carries `argocd.argoproj.io/tracking-id` naming the app.
  std::vector<std::string> manifests;
  // The revision the manifests were rendered from: a commit sha (git) or a chart version (Helm
  // repository), resolved by the repo-server from the request's `revision`.
  std::string revision;
  // Argo CD's ApplicationSourceType: "Directory", "Helm", "Kustomize" or "Plugin".
  std::string source_type;
};

// What ResolveRevision resolved (repository.ResolveRevisionResponse).
struct ResolvedRevision {
  std::string revision;            // e.g. the commit sha HEAD or a branch points to now
  std::string ambiguous_revision;  // e.g. "HEAD (<sha>)", for messages
};

// A client of one argocd-repo-server (or a Service in front of several).
//
// Thread-safe: calls may run concurrently from any thread; each call blocks its caller until the
// repo-server answers or the call's deadline passes, so call from a worker pool, never from the
// reconcile loop. Reconnects by itself after the repo-server restarts: a call made while it is
// down fails with kUnavailable and a later call succeeds once it is back.
//
// Errors (STYLE.md §4):
//   kFailedPrecondition  the repo-server answered with an error: the source does not render
//                        (broken YAML, a Helm or Kustomize error, a missing path or revision, git
//                        unreachable from the repo-server). The message is the repo-server's.
//                        Show it on the hub; retry on the next revision or refresh only.
//   kInvalidArgument     the request does not fit repository.proto (a field Argo CD does not
//                        know, a wrong type): a bug in the request or an unsupported source.
//   kUnavailable         the repo-server cannot be reached (down, restarting, refused TLS).
//   kDeadlineExceeded    no answer within the call's deadline (a slow render or a hung server).
//   kResourceExhausted   a message above the size limit.
//   kUnavailable, kDeadlineExceeded and kResourceExhausted are retried with backoff.
class RepoServerClient {
 public:
  virtual ~RepoServerClient() = default;

  // The revision `request.ambiguousRevision` (a branch, tag, HEAD, a semver range of a chart)
  // stands for now.
  virtual absl::StatusOr<ResolvedRevision> ResolveRevision(
      const ResolveRevisionRequest& request) = 0;

  // The manifests of the request's source at its revision.
  virtual absl::StatusOr<RenderedManifests> GenerateManifest(const ManifestRequest& request) = 0;
};

}  // namespace mmi::argocd_repo
