#include "services/dispatcher/gitops/argo_server_verifier.h"

#include "absl/strings/str_cat.h"
#include "libs/kube_object/object.h"
#include "services/dispatcher/gitops/internal/hub_resources.h"

namespace mmi::dispatcher {

using internal::Core;
using kube::FieldAt;
using kube::Label;
using kube::Metadata;
using kube::StringAt;
using nlohmann::json;

std::optional<SpecResult> ArgoServerVerifier::Verify(const json& gitops_cluster,
                                                     const GitOpsClusterSpec& spec, SpecRun& run) {
  // 1. Namespace authorisation (§4.4 step 4).
  if (spec.argo_namespace != spec.namespace_) {
    auto ns = client_.Get(Core("namespaces"), spec.argo_namespace);
    if (!ns.ok() && !absl::IsNotFound(ns.status())) {
      return run.Transient(absl::StrCat("GET namespace ", spec.argo_namespace), ns.status());
    }
    if (!ns.ok() || Label(*ns, kGitOpsArgoNamespaceLabel) != "true") {
      return run.Fail(kCondArgoServerVerified, kReasonInvalidConfiguration,
                      absl::StrCat("namespace ", spec.argo_namespace,
                                   " differs from the GitOpsCluster's "
                                   "namespace and is not labelled ",
                                   kGitOpsArgoNamespaceLabel, "=true"));
    }
  }
  // 2. The Argo CD server is there (§4.4 step 5).
  if (StringAt(FieldAt(Metadata(gitops_cluster), "annotations"),
               kSkipArgoNamespaceVerifyAnnotation) == "true") {
    run.Set(kCondArgoServerVerified, "True", kReasonSuccess,
            absl::StrCat("verification of namespace ", spec.argo_namespace,
                         " skipped by annotation ", kSkipArgoNamespaceVerifyAnnotation));
    return std::nullopt;
  }
  kube::ListOptions by_label;
  by_label.label_selector = kArgoServerServiceSelector;
  by_label.limit = 1;
  auto services = client_.List(Core("services", spec.argo_namespace), by_label);
  if (!services.ok()) {
    return run.Transient(absl::StrCat("LIST services in ", spec.argo_namespace), services.status());
  }
  if (services->items.empty()) {
    return run.Fail(kCondArgoServerVerified, kReasonArgoServerNotFound,
                    absl::StrCat("no Argo CD server Service (", kArgoServerServiceSelector,
                                 ") in namespace ", spec.argo_namespace));
  }
  run.Set(kCondArgoServerVerified, "True", kReasonSuccess,
          absl::StrCat("Argo CD server found in namespace ", spec.argo_namespace));
  return std::nullopt;
}

}  // namespace mmi::dispatcher
