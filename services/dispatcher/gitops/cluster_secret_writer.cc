#include "services/dispatcher/gitops/cluster_secret_writer.h"

#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "libs/common/status_macros.h"
#include "libs/kube_object/object.h"
#include "services/dispatcher/gitops/gitops_cluster_controller_settings.h"
#include "services/dispatcher/gitops/internal/controller_log.h"
#include "services/dispatcher/gitops/internal/hub_resources.h"

namespace mmi::dispatcher {
namespace {

using internal::Core;
using kube::BoolAt;
using kube::FieldAt;
using kube::Metadata;
using kube::StringAt;
using nlohmann::json;

}  // namespace

SpecResult ClusterSecretWriter::Register(
    const json& gitops_cluster, const GitOpsClusterSpec& spec,
    const std::map<std::string, kube::ObjectPtr>& cluster_objects, bool retry, SpecRun& run) {
  const json& agent =
      FieldAt(FieldAt(FieldAt(gitops_cluster, "spec"), "gitopsAddon"), "argoCDAgent");
  if (BoolAt(agent, json::json_pointer("/enabled"))) {
    return run.Fail(kCondClustersRegistered, kReasonInvalidConfiguration,
                    "spec.gitopsAddon.argoCDAgent is not supported by the mmi dispatcher (pull "
                    "model only)");
  }
  if (!spec.create_blank_cluster_secrets) {
    return run.Fail(kCondClustersRegistered, kReasonClusterRegistrationFailed,
                    "only blank (pull-model) cluster secrets are supported: set "
                    "spec.createBlankClusterSecrets: true");
  }
  std::set<std::string> foreign;  // clusters with a non-ACM Argo CD cluster secret
  for (const kube::ObjectPtr& secret : secrets_.List(spec.argo_namespace)) {
    if (IsNonAcmClusterSecret(*secret)) {
      foreign.insert(ClusterOfSecret(*secret));
    }
  }
  std::vector<std::string> failures;
  for (const auto& [cluster, mc] : cluster_objects) {
    json desired = BlankClusterSecret(*mc, spec);
    desired["metadata"]["labels"][kManagedByLabel] = managed_by_;
    run.wanted().secrets.emplace(kube::ObjectKey(desired),
                                 kube::ObjectKey(spec.argo_namespace, cluster));
    if (foreign.contains(cluster)) {
      failures.push_back(
          absl::StrCat(cluster, ": found existing non-ACM ArgoCD clusters secrets in namespace ",
                       spec.argo_namespace));
      continue;
    }
    bool created = false;
    absl::Status st = Write(desired, created);
    run.result().created_cluster_secrets |= created;
    if (!st.ok()) {
      failures.push_back(absl::StrCat(cluster, ": ", st.ToString()));
      retry = true;
    }
  }
  if (!failures.empty()) {
    return run.Fail(
        kCondClustersRegistered, kReasonClusterRegistrationFailed,
        absl::StrCat("cannot register ", failures.size(), " of ", cluster_objects.size(),
                     " managed cluster(s): ", absl::StrJoin(failures, "; ")),
        retry ? ReconcileOutcome::kError : ReconcileOutcome::kFailed);
  }
  run.Set(kCondClustersRegistered, "True", kReasonSuccess,
          absl::StrCat("cluster secrets of ", cluster_objects.size(),
                       " managed cluster(s) written to namespace ", spec.argo_namespace));
  run.result().status["message"] =
      CapMessage(AddedClustersMessage(run.wanted().clusters, spec.argo_namespace));
  run.result().outcome = retry ? ReconcileOutcome::kError : ReconcileOutcome::kSuccess;
  return run.result();
}

absl::Status ClusterSecretWriter::Write(const json& desired, bool& created) {
  const std::string ns = StringAt(Metadata(desired), "namespace");
  const std::string name = StringAt(Metadata(desired), "name");
  const kube::ResourceRef ref = Core("secrets", ns);
  const kube::WriteOptions options{.field_manager = field_manager_};
  json existing;
  if (kube::ObjectPtr cached = secrets_.Get(ns, name); cached != nullptr) {
    if (ClusterSecretUpToDate(*cached, desired)) {
      return absl::OkStatus();
    }
    existing = *cached;
  } else {
    auto create = client_.Create(ref, desired, options);
    if (create.ok()) {
      internal::GitOpsClusterLog().Info("cluster secret created",
                                        {{"resource", kube::ObjectKey(ns, name)}});
      created = true;
      return absl::OkStatus();
    }
    if (!absl::IsAlreadyExists(create.status())) {
      return create.status();
    }
    ASSIGN_OR_RETURN(existing, client_.Get(ref, name));
    if (ClusterSecretUpToDate(existing, desired)) {
      return absl::OkStatus();
    }
  }
  // The cache may be behind: one retry from a fresh read on a resourceVersion conflict.
  for (int attempt = 0;; ++attempt) {
    auto updated = client_.Update(ref, ClusterSecretUpdate(existing, desired), options);
    if (updated.ok()) {
      internal::GitOpsClusterLog().Info("cluster secret updated",
                                        {{"resource", kube::ObjectKey(ns, name)}});
      return absl::OkStatus();
    }
    if (!absl::IsAborted(updated.status()) || attempt > 0) {
      return updated.status();
    }
    ASSIGN_OR_RETURN(existing, client_.Get(ref, name));
    if (ClusterSecretUpToDate(existing, desired)) {
      return absl::OkStatus();
    }
  }
}

}  // namespace mmi::dispatcher
