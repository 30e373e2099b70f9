#include "services/dispatcher/gitops/spec_reconciler.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "libs/kube_object/object.h"
#include "services/dispatcher/gitops/internal/controller_log.h"
#include "services/dispatcher/gitops/spec_run.h"

namespace mmi::dispatcher {
namespace {

using nlohmann::json;

}  // namespace

SpecReconciler::SpecReconciler(kube::KubeClient& client, const Clock& clock,
                               const kube::Informer& managed_clusters,
                               const kube::Informer& secrets,
                               const GitOpsClusterControllerSettings& settings)
    : clock_(clock),
      verifier_(client),
      appset_resources_(client, settings.field_manager),
      placement_(client, managed_clusters, settings.decision_page_size),
      secrets_(client, secrets, settings.field_manager, settings.managed_by) {}

SpecResult SpecReconciler::Reconcile(const json& gitops_cluster, const GitOpsClusterSpec& spec,
                                     json status) {
  SpecRun run(kube::ObjectKey(spec.namespace_, spec.name), std::move(status), clock_.Now());
  // Policy templates are not produced by this controller; say so instead of pretending.
  if (kube::BoolAt(gitops_cluster, json::json_pointer("/spec/createPolicyTemplate"))) {
    run.Set(kCondPolicyTemplateReady, "False", kReasonPolicyTemplateCreationFailed,
            "spec.createPolicyTemplate is not supported by the mmi dispatcher");
  } else {
    run.Set(kCondPolicyTemplateReady, "True", kReasonNotRequired, "policy template not requested");
  }
  if (std::optional<SpecResult> stop = verifier_.Verify(gitops_cluster, spec, run)) {
    return *std::move(stop);
  }
  // Duck-type ConfigMaps and the ApplicationSet controller's RBAC; failures do not stop the
  // reconcile (§4.4 steps 6-7).
  bool retry = false;
  if (absl::Status st = appset_resources_.Ensure(spec.argo_namespace); !st.ok()) {
    run.Set(kCondApplicationSetResourcesReady, "False", kReasonConfigMapCreationFailed,
            CapMessage(st.ToString()));
    internal::GitOpsClusterLog().Warn(
        "cannot create ApplicationSet resources",
        {{"resource", kube::ObjectKey(spec.namespace_, spec.name)}, {"error", st.ToString()}});
    retry = true;
  } else {
    run.Set(kCondApplicationSetResourcesReady, "True", kReasonSuccess,
            absl::StrCat("acm-placement ConfigMaps and placement RBAC exist in namespace ",
                         spec.argo_namespace));
  }
  auto clusters = placement_.Resolve(spec, run);
  if (!clusters.has_value()) {
    return run.result();
  }
  return secrets_.Register(gitops_cluster, spec, *clusters, retry, run);
}

}  // namespace mmi::dispatcher
