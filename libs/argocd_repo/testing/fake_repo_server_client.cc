#include "libs/argocd_repo/testing/fake_repo_server_client.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace mmi::argocd_repo::testing {

void FakeRepoServerClient::SetManifests(const ManifestRequest& request,
                                        absl::StatusOr<RenderedManifests> answer) {
  absl::MutexLock lock(&mu_);
  manifests_.insert_or_assign(request.Key(), std::move(answer));
}

void FakeRepoServerClient::SetDefaultManifests(absl::StatusOr<RenderedManifests> answer) {
  absl::MutexLock lock(&mu_);
  default_manifests_ = std::move(answer);
}

void FakeRepoServerClient::SetRevision(const std::string& ambiguous_revision,
                                       absl::StatusOr<ResolvedRevision> answer) {
  absl::MutexLock lock(&mu_);
  revisions_.insert_or_assign(ambiguous_revision, std::move(answer));
}

std::vector<ManifestRequest> FakeRepoServerClient::manifest_requests() const {
  absl::MutexLock lock(&mu_);
  return manifest_requests_;
}

std::vector<ResolveRevisionRequest> FakeRepoServerClient::resolve_requests() const {
  absl::MutexLock lock(&mu_);
  return resolve_requests_;
}

absl::StatusOr<ResolvedRevision> FakeRepoServerClient::ResolveRevision(
    const ResolveRevisionRequest& request) {
  absl::MutexLock lock(&mu_);
  resolve_requests_.push_back(request);
  const auto revision = request.body.find("ambiguousRevision");
  const std::string ambiguous =
      revision != request.body.end() && revision->is_string() ? revision->get<std::string>() : "";
  if (auto it = revisions_.find(ambiguous); it != revisions_.end()) {
    return it->second;
  }
  return absl::FailedPreconditionError(
      absl::StrCat("FakeRepoServerClient: unable to resolve '", ambiguous, "'"));
}

absl::StatusOr<RenderedManifests> FakeRepoServerClient::GenerateManifest(
    const ManifestRequest& request) {
  absl::MutexLock lock(&mu_);
  manifest_requests_.push_back(request);
  if (auto it = manifests_.find(request.Key()); it != manifests_.end()) {
    return it->second;
  }
  return default_manifests_;
}

}  // namespace mmi::argocd_repo::testing
