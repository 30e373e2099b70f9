#include "services/dispatcher/manifests/repo_secrets.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "libs/common/log.h"

namespace mmi::dispatcher::manifests {

kube::InformerSettings RepoSecretsInformerSettings(const std::string& argocd_namespace) {
  kube::InformerSettings s;
  s.resource = kube::ResourceRef{"", "v1", "secrets", argocd_namespace};
  s.label_selector = std::string(argocd_repo::kSecretTypeLabel) + " in (" +
                     std::string(argocd_repo::kSecretTypeRepository) + "," +
                     std::string(argocd_repo::kSecretTypeRepoCreds) + ")";
  s.transform = kube::DropFields({"/metadata/managedFields"});
  return s;
}

RepoSecrets::RepoSecrets(Lister list, std::function<void()> on_change)
    : list_(std::move(list)), on_change_(std::move(on_change)) {}

void RepoSecrets::OnAdd(const kube::ObjectPtr& /*object*/, bool /*in_initial_list*/) { Changed(); }

void RepoSecrets::OnUpdate(const kube::ObjectPtr& /*old_object*/,
                           const kube::ObjectPtr& /*new_object*/) {
  Changed();
}

void RepoSecrets::OnDelete(const kube::ObjectPtr& /*last_state*/) { Changed(); }

void RepoSecrets::OnSynced() {
  {
    absl::MutexLock lock(&mu_);
    synced_ = true;
    stale_ = true;
  }
  if (on_change_) {
    on_change_();
  }
}

void RepoSecrets::Changed() {
  bool synced = false;
  {
    absl::MutexLock lock(&mu_);
    stale_ = true;
    synced = synced_;
  }
  // The first list's adds are one change, told by OnSynced.
  if (synced && on_change_) {
    on_change_();
  }
}

bool RepoSecrets::synced() const {
  absl::MutexLock lock(&mu_);
  return synced_;
}

std::shared_ptr<const argocd_repo::RepositoryCredentials> RepoSecrets::Current() {
  absl::MutexLock lock(&mu_);
  if (!stale_ && current_) {
    return current_;
  }
  std::vector<nlohmann::json> secrets;
  for (const kube::ObjectPtr& secret : list_()) {
    secrets.push_back(*secret);
  }
  current_ = std::make_shared<const argocd_repo::RepositoryCredentials>(secrets);
  stale_ = false;
  static const log::Logger logger("dispatcher.manifests");
  for (const argocd_repo::SkippedSecret& skipped : current_->skipped()) {
    // Names and fields only (repo_credentials.h): safe to log.
    logger.Warn(absl::StrCat("repository Secret skipped: ", skipped.error.message()));
  }
  return current_;
}

}  // namespace mmi::dispatcher::manifests
