// The repo-server requests for a hub Application, built as Argo CD's application-controller
// builds them (controller/state.go, GetRepoObjs, of the pinned Argo CD), so the repo-server
// renders what Argo CD itself would render.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "libs/argocd_repo/repo_server_client.h"

namespace mmi::argocd_repo {

// What the application-controller takes from argocd-cm, its own flags and the destination
// cluster. Defaults are Argo CD's defaults with an empty argocd-cm.
struct RenderSettings {
  // The namespace Argo CD runs in: an Application there is rendered as `<name>`, one elsewhere as
  // `<namespace>_<name>` (Application.InstanceName), which is what the tracking label or
  // annotation of every rendered object names.
  std::string controller_namespace = "openshift-gitops";
  // argocd-cm application.instanceLabelKey.
  std::string app_label_key = "app.kubernetes.io/instance";
  // argocd-cm application.resourceTrackingMethod: annotation, label or annotation+label.
  std::string tracking_method = "annotation";
  // The destination's Kubernetes version ("1.34.4") and its API versions ("apps/v1",
  // "apps/v1/Deployment", ...), which Helm's Capabilities see. Empty: unknown, as the controller
  // sends when it has no runtime state; Helm then assumes its own defaults.
  std::string kube_version;
  std::vector<std::string> api_versions;
  // argocd-cm kustomize.buildOptions.
  std::string kustomize_build_options;
  // argocd-cm helm.valuesFileSchemes.
  std::vector<std::string> helm_values_file_schemes = {"https", "http"};
  // argocd-cm kustomize.enable, helm.enable, jsonnet.enable (plugins are always on).
  std::map<std::string, bool> enabled_source_types = {
      {"Directory", true}, {"Helm", true}, {"Kustomize", true}, {"Plugin", true}};
  // argocd-cm installationID ("" = none).
  std::string installation_id;
};

// The v1alpha1.Repository the controller sends for `repo_url` when no repository Secret
// configures it: {"repo": repo_url}. RepositoryCredentials::Lookup (repo_credentials.h) gives the
// one Argo CD's repository and repo-creds Secrets configure, and this one when none matches.
nlohmann::json PublicRepository(const std::string& repo_url);

// The v1alpha1.ApplicationSource of an Application's `spec.source` (Kubernetes JSON) in
// protobuf's JSON form. The two differ where Argo CD's Go types do not map one to one:
// helm.valuesObject (a RawExtension: base64 JSON), kustomize.replicas[].count (an IntOrString),
// kustomize.patches[].target (gvk nested under resId) and plugin.parameters[].map / .array
// (wrapped in OptionalMap / OptionalArray). Other fields are copied as they are.
// kInvalidArgument naming the field when one has the wrong JSON type.
absl::StatusOr<nlohmann::json> SourceToProtoJson(const nlohmann::json& source);

// The GenerateManifest request for `application` (a hub Application, Kubernetes JSON) at
// `revision` (a resolved commit sha, or "" for spec.source.targetRevision), the way GetRepoObjs
// builds it for a single source: repo, revision, appName (InstanceName), namespace
// (spec.destination.namespace), applicationSource, appLabelKey, kustomizeOptions, kubeVersion,
// apiVersions, trackingMethod, enabledSourceTypes, helmOptions, hasMultipleSources=false,
// projectName, installationID. `repository` is the v1alpha1.Repository in protobuf JSON form
// (PublicRepository(repoURL) when null). Left out, as the controller leaves them empty for a
// public git source: repos and helmRepoCreds (Helm dependencies' repositories), refSources,
// projectSourceRepos, noCache, verifySignature.
// kInvalidArgument when the Application has no spec.source (or has spec.sources: multiple
// sources are not rendered), no repoURL, or a source SourceToProtoJson refuses.
absl::StatusOr<ManifestRequest> BuildManifestRequest(const nlohmann::json& application,
                                                     const std::string& revision,
                                                     const RenderSettings& settings,
                                                     const nlohmann::json& repository = nullptr);

// The ResolveRevision request for `application`'s source and `ambiguous_revision` (""
// = spec.source.targetRevision, and "HEAD" when that is empty too), as the controller sends it:
// the Application (name, namespace, spec.source and spec.project only: the repo-server reads the
// source to tell git from Helm and OCI), sourceIndex 0. Same errors as BuildManifestRequest.
absl::StatusOr<ResolveRevisionRequest> BuildResolveRevisionRequest(
    const nlohmann::json& application, const std::string& ambiguous_revision,
    const nlohmann::json& repository = nullptr);

}  // namespace mmi::argocd_repo
