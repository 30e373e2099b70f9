// RepoSecrets: Argo CD's repository Secrets, as the repo-server requests need them (issue 38 item
// 2, "with ... the repo credentials as Argo CD keeps them"). The dispatcher runs a Secrets
// informer on manifests.argocdNamespace, with RepoSecretsInformerSettings() (the two
// secret-type labels only), and adds a RepoSecrets as its handler, only when manifest delivery is
// on. Current() answers the RepositoryCredentials (libs/argocd_repo/repo_credentials.h) of the
// Secrets cached now.
//
// Rebuilt lazily: a change only marks the credentials stale (a first list of N Secrets costs one
// rebuild, not N), and the next Current() lists the cache and builds them again. The Secrets are
// small and few (one per repository or template), so a rebuild is cheap.
//
// Threads: the informer calls the handler methods on its thread; Current() on any thread (the
// reconcile loop). `on_change` runs on the informer's thread, after every change once synced: it
// must only enqueue work (the reconciler renders its manifest-delivered Applications again,
// their credentials may have changed).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "libs/argocd_repo/repo_credentials.h"
#include "libs/kube/informer.h"
#include "libs/kube/informer_settings.h"

namespace mmi::dispatcher::manifests {

// The Secrets informer of `argocd_namespace`: only Secrets labelled
// argocd.argoproj.io/secret-type in (repository, repo-creds), managedFields dropped.
kube::InformerSettings RepoSecretsInformerSettings(const std::string& argocd_namespace);

class RepoSecrets final : public kube::InformerHandler {
 public:
  // `list` answers every cached Secret (Informer::List); `on_change` may be empty.
  using Lister = std::function<std::vector<kube::ObjectPtr>()>;
  RepoSecrets(Lister list, std::function<void()> on_change);

  void OnAdd(const kube::ObjectPtr& object, bool in_initial_list) override;
  void OnUpdate(const kube::ObjectPtr& old_object, const kube::ObjectPtr& new_object) override;
  void OnDelete(const kube::ObjectPtr& last_state) override;
  void OnSynced() override;

  // Any thread. The credentials of the Secrets cached now (none before the first list: every
  // repository then looks public). Shared, immutable: a caller may keep them across a change.
  std::shared_ptr<const argocd_repo::RepositoryCredentials> Current();
  // Any thread. The first list is in.
  bool synced() const;

 private:
  void Changed();

  const Lister list_;
  const std::function<void()> on_change_;
  mutable absl::Mutex mu_;
  std::shared_ptr<const argocd_repo::RepositoryCredentials> current_ ABSL_GUARDED_BY(mu_);
  bool stale_ ABSL_GUARDED_BY(mu_) = true;
  bool synced_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace mmi::dispatcher::manifests
