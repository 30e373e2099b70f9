// FakeRepoServerClient: a call-recording RepoServerClient for unit tests of its callers.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "libs/argocd_repo/repo_server_client.h"

namespace mmi::argocd_repo::testing {

// Answers GenerateManifest with the answer set for the request's Key(), else the default answer
// (kUnavailable until one is set); ResolveRevision likewise by the request's ambiguousRevision.
// Records every request. Thread-safe.
class FakeRepoServerClient final : public RepoServerClient {
 public:
  void SetManifests(const ManifestRequest& request, absl::StatusOr<RenderedManifests> answer);
  void SetDefaultManifests(absl::StatusOr<RenderedManifests> answer);
  void SetRevision(const std::string& ambiguous_revision, absl::StatusOr<ResolvedRevision> answer);

  std::vector<ManifestRequest> manifest_requests() const;
  std::vector<ResolveRevisionRequest> resolve_requests() const;

  absl::StatusOr<ResolvedRevision> ResolveRevision(const ResolveRevisionRequest& request) override;
  absl::StatusOr<RenderedManifests> GenerateManifest(const ManifestRequest& request) override;

 private:
  mutable absl::Mutex mu_;
  std::map<std::string, absl::StatusOr<RenderedManifests>> manifests_ ABSL_GUARDED_BY(mu_);
  absl::StatusOr<RenderedManifests> default_manifests_ ABSL_GUARDED_BY(mu_) =
      absl::UnavailableError("FakeRepoServerClient: no manifests set");
  std::map<std::string, absl::StatusOr<ResolvedRevision>> revisions_ ABSL_GUARDED_BY(mu_);
  std::vector<ManifestRequest> manifest_requests_ ABSL_GUARDED_BY(mu_);
  std::vector<ResolveRevisionRequest> resolve_requests_ ABSL_GUARDED_BY(mu_);
};

}  // namespace mmi::argocd_repo::testing
