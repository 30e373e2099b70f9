// The render key (ADR 0007, "One render per distinct request"): Applications whose requests have
// one key get one render, so 3,000 clusters on one plain or Kustomize source at one revision cost
// one GenerateManifest call, not 3,000.
#pragma once

#include <string>
#include <string_view>

#include "libs/argocd_repo/repo_server_client.h"

namespace mmi::dispatcher::manifests {

// What the dispatcher sends to the repo-server for `request` (built by
// argocd_repo::BuildManifestRequest): the request without `appLabelKey`, `trackingMethod` and
// `installationID`. The builder sets them as the application-controller does, and with
// `appLabelKey` set the repo-server writes Argo CD's tracking label or annotation, which names
// the Application, into every object it renders. The spoke has no Argo CD to read it, so the
// dispatcher sends the request without them and the name stays out of the output.
argocd_repo::ManifestRequest RenderRequestOf(argocd_repo::ManifestRequest request);

// Whether the request's `appName` can change what the repo-server renders, given the source type
// the repo-server detected for this request (RenderedManifests::source_type of an earlier render
// at the same revision; "" when none is known). The repo-server uses the name as Helm's release
// name when helm.releaseName is empty, passes it to plugins (ARGOCD_APP_NAME), substitutes
// $ARGOCD_APP_NAME in Helm parameters, Kustomize images and labels and Jsonnet variables, and
// runs Kustomize with it in the environment.
enum class AppNameUse {
  // Helm without releaseName, a plugin, a field that names $ARGOCD_APP_NAME, or Kustomize with
  // exec or alpha plugins enabled (kustomize.buildOptions).
  kUsed,
  kUnused,   // Directory, Kustomize, Helm with releaseName, and none of the above
  kUnknown,  // the source declares no type and none was detected: it may be a Helm chart
};
AppNameUse AppNameUseOf(const argocd_repo::ManifestRequest& request,
                        std::string_view detected_source_type = "");

// The render key: lowercase hex SHA-256 of RenderRequestOf(request) in canonical form, without
// `appName` unless AppNameUseOf says kUsed or kUnknown. The destination namespace always counts
// (the repo-server sets it on namespaced objects and exposes it as ARGOCD_APP_NAMESPACE), and so
// do the revision, the repository and every other field. Pure; thread-safe.
//
// Not covered: a per-Application parameter file `.argocd-source-<appName>.yaml` in the source's
// path (the repo-server merges it into the source). The dispatcher cannot see the repository, so
// Applications sharing a key share the render made for one of their names.
std::string RenderKeyOf(const argocd_repo::ManifestRequest& request,
                        std::string_view detected_source_type = "");

// The key with `appName` always left out: equal for the Applications whose requests differ only
// in their name. The render cache keeps the detected source type under it.
std::string SourceKeyOf(const argocd_repo::ManifestRequest& request);

// The revision key: (repoURL, chart, targetRevision as sent). The render cache resolves one
// revision per key (a Helm repository resolves a version range per chart), and the renderer's
// resolveInterval tick asks once per key.
std::string RevisionKeyOf(const argocd_repo::ResolveRevisionRequest& request);

}  // namespace mmi::dispatcher::manifests
