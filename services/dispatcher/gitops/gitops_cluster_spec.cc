// GitOpsClusterController::ReconcileSpec and the writes it makes: a valid GitOpsCluster's
// namespace and Argo CD server checks, the ApplicationSet resources, its Placement's decisions
// and the blank cluster secrets (hub-apis.md §4.4, §4.5).
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "libs/common/log.h"
#include "libs/common/status_macros.h"
#include "services/dispatcher/gitops/gitops_cluster_controller.h"
#include "services/dispatcher/gitops/internal/controller_handler.h"
#include "services/dispatcher/gitops/internal/hub_resources.h"

namespace mmi::dispatcher {
namespace {

using internal::Core;
using internal::PlacementDecisions;
using internal::Placements;
using internal::Rbac;
using kube::BoolAt;
using kube::FieldAt;
using kube::Label;
using kube::Metadata;
using kube::StringAt;
using nlohmann::json;

const log::Logger& Log() {
  static const log::Logger logger("dispatcher.gitopscluster");
  return logger;
}

}  // namespace

// One ReconcileSpec: the result it builds and the two ways a step stops it.
class GitOpsClusterController::SpecRun {
 public:
  SpecRun(std::string key, json status, std::chrono::system_clock::time_point now)
      : key_(std::move(key)), now_(now) {
    result_.status = std::move(status);
    result_.managed.emplace();
  }
  SpecResult& result() { return result_; }
  Managed& managed() { return *result_.managed; }
  void Set(const char* condition, const char* value, const char* reason,
           const std::string& message) {
    SetCondition(result_.status, condition, value, reason, message, now_);
  }
  // An answer about the hub: the condition is False until the spec or the hub changes.
  SpecResult Fail(const char* condition, const char* reason, const std::string& message,
                  Outcome outcome = Outcome::kFailed) {
    Set(condition, "False", reason, CapMessage(message));
    result_.status["message"] = CapMessage(message);
    Log().Warn("GitOpsCluster not reconciled",
               {{"resource", key_}, {"condition", condition}, {"error", message}});
    result_.outcome = outcome;
    return result_;
  }
  // As Fail(), keeping what the GitOpsCluster wanted before (its decisions are not usable).
  SpecResult FailKeeping(const char* condition, const char* reason, const std::string& message) {
    result_.managed.reset();
    return Fail(condition, reason, message);
  }
  // A request that failed on the way (not an answer about the hub): keep what we had, retry.
  SpecResult Transient(const std::string& what, const absl::Status& error) {
    result_.managed.reset();
    result_.status["message"] = CapMessage(absl::StrCat(what, ": ", error.ToString()));
    Log().Warn("GitOpsCluster reconcile failed; retrying",
               {{"resource", key_}, {"error", absl::StrCat(what, ": ", error.ToString())}});
    result_.outcome = Outcome::kError;
    return result_;
  }

 private:
  std::string key_;
  std::chrono::system_clock::time_point now_;
  SpecResult result_;
};

GitOpsClusterController::SpecResult GitOpsClusterController::ReconcileSpec(
    const json& gitops_cluster, const GitOpsClusterSpec& spec, json status) {
  SpecRun run(kube::ObjectKey(spec.namespace_, spec.name), std::move(status), clock_.Now());
  // Policy templates are not produced by this controller; say so instead of pretending.
  if (BoolAt(gitops_cluster, json::json_pointer("/spec/createPolicyTemplate"))) {
    run.Set(kCondPolicyTemplateReady, "False", kReasonPolicyTemplateCreationFailed,
            "spec.createPolicyTemplate is not supported by the mmi dispatcher");
  } else {
    run.Set(kCondPolicyTemplateReady, "True", kReasonNotRequired, "policy template not requested");
  }
  if (std::optional<SpecResult> stop = VerifyArgoServer(gitops_cluster, spec, run)) {
    return *std::move(stop);
  }
  // 3. Duck-type ConfigMaps and the ApplicationSet controller's RBAC; failures do not stop the
  // reconcile (§4.4 steps 6-7).
  bool retry = false;
  if (absl::Status st = EnsureAppSetResources(spec.argo_namespace); !st.ok()) {
    run.Set(kCondApplicationSetResourcesReady, "False", kReasonConfigMapCreationFailed,
            CapMessage(st.ToString()));
    Log().Warn(
        "cannot create ApplicationSet resources",
        {{"resource", kube::ObjectKey(spec.namespace_, spec.name)}, {"error", st.ToString()}});
    retry = true;
  } else {
    run.Set(kCondApplicationSetResourcesReady, "True", kReasonSuccess,
            absl::StrCat("acm-placement ConfigMaps and placement RBAC exist in namespace ",
                         spec.argo_namespace));
  }
  auto clusters = ResolvePlacement(spec, run);
  if (!clusters.has_value()) {
    return run.result();
  }
  return RegisterClusters(gitops_cluster, spec, *clusters, retry, run);
}

std::optional<GitOpsClusterController::SpecResult> GitOpsClusterController::VerifyArgoServer(
    const json& gitops_cluster, const GitOpsClusterSpec& spec, SpecRun& run) {
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

std::optional<std::map<std::string, kube::ObjectPtr>> GitOpsClusterController::ResolvePlacement(
    const GitOpsClusterSpec& spec, SpecRun& run) {
  // 4. Placement and its decisions (§4.4 step 8, §3.4).
  const std::string placement_key = kube::ObjectKey(spec.namespace_, spec.placement_name);
  if (auto placement = client_.Get(Placements(spec.namespace_), spec.placement_name);
      !placement.ok()) {
    if (!absl::IsNotFound(placement.status())) {
      run.Transient(absl::StrCat("GET Placement ", placement_key), placement.status());
      return std::nullopt;
    }
    run.Fail(kCondPlacementResolved, kReasonPlacementNotFound,
             absl::StrCat("Placement ", placement_key, " not found"));
    return std::nullopt;
  }
  kube::ListOptions list_options;
  list_options.label_selector = absl::StrCat(kPlacementLabel, "=", spec.placement_name);
  list_options.limit = settings_.decision_page_size;
  auto decisions = kube::ListAll(client_, PlacementDecisions(spec.namespace_), list_options);
  if (!decisions.ok()) {
    run.Transient(absl::StrCat("LIST PlacementDecisions of ", placement_key), decisions.status());
    return std::nullopt;
  }
  auto clusters = ResolveDecisions(decisions->items);
  if (!clusters.ok()) {
    run.FailKeeping(kCondPlacementResolved, kReasonInvalidConfiguration,
                    std::string(clusters.status().message()));
    return std::nullopt;
  }
  std::map<std::string, kube::ObjectPtr> cluster_objects;
  std::vector<std::string> missing;
  for (const std::string& cluster : *clusters) {
    kube::ObjectPtr mc = managed_clusters_->Get("", cluster);
    if (mc == nullptr) {
      missing.push_back(cluster);
    } else {
      cluster_objects.emplace(cluster, std::move(mc));
    }
  }
  if (!missing.empty()) {
    // Upstream fails the whole step; the ManagedCluster's creation (or the decision's removal)
    // triggers the next reconcile.
    run.FailKeeping(kCondPlacementResolved, kReasonPlacementNotFound,
                    absl::StrCat("Placement ", placement_key, " decides ManagedCluster(s) ",
                                 absl::StrJoin(missing, ", "), " that do not exist"));
    return std::nullopt;
  }
  run.Set(
      kCondPlacementResolved, "True", kReasonSuccess,
      absl::StrCat("Placement ", placement_key, " resolved to ", clusters->size(),
                   " managed cluster(s) in ", decisions->items.size(), " PlacementDecision(s)"));
  run.managed().clusters = *clusters;
  return cluster_objects;
}

GitOpsClusterController::SpecResult GitOpsClusterController::RegisterClusters(
    const json& gitops_cluster, const GitOpsClusterSpec& spec,
    const std::map<std::string, kube::ObjectPtr>& cluster_objects, bool retry, SpecRun& run) {
  // 5. Cluster secrets (§4.4 step 10, §4.5): the blank variant only.
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
  for (const kube::ObjectPtr& secret : secrets_->List(spec.argo_namespace)) {
    if (IsNonAcmClusterSecret(*secret)) {
      foreign.insert(ClusterOfSecret(*secret));
    }
  }
  std::vector<std::string> failures;
  for (const auto& [cluster, mc] : cluster_objects) {
    json desired = BlankClusterSecret(*mc, spec);
    desired["metadata"]["labels"][kManagedByLabel] = settings_.managed_by;
    run.managed().secrets.emplace(kube::ObjectKey(desired),
                                  kube::ObjectKey(spec.argo_namespace, cluster));
    if (foreign.contains(cluster)) {
      failures.push_back(
          absl::StrCat(cluster, ": found existing non-ACM ArgoCD clusters secrets in namespace ",
                       spec.argo_namespace));
      continue;
    }
    if (absl::Status st = WriteClusterSecret(desired); !st.ok()) {
      failures.push_back(absl::StrCat(cluster, ": ", st.ToString()));
      retry = true;
    }
  }
  if (!failures.empty()) {
    return run.Fail(
        kCondClustersRegistered, kReasonClusterRegistrationFailed,
        absl::StrCat("cannot register ", failures.size(), " of ", cluster_objects.size(),
                     " managed cluster(s): ", absl::StrJoin(failures, "; ")),
        retry ? Outcome::kError : Outcome::kFailed);
  }
  run.Set(kCondClustersRegistered, "True", kReasonSuccess,
          absl::StrCat("cluster secrets of ", cluster_objects.size(),
                       " managed cluster(s) written to namespace ", spec.argo_namespace));
  run.result().status["message"] =
      CapMessage(AddedClustersMessage(run.managed().clusters, spec.argo_namespace));
  run.result().outcome = retry ? Outcome::kError : Outcome::kSuccess;
  return run.result();
}

absl::Status GitOpsClusterController::CreateIfAbsent(const kube::ResourceRef& ref,
                                                     const json& object) {
  const std::string name = StringAt(Metadata(object), "name");
  auto existing = client_.Get(ref, name);
  if (existing.ok()) {
    return absl::OkStatus();
  }
  if (!absl::IsNotFound(existing.status())) {
    return existing.status();
  }
  auto created = client_.Create(ref, object, {.field_manager = settings_.field_manager});
  if (created.ok()) {
    Log().Info("created",
               {{"resource", absl::StrCat(ref.GroupResource(), " ", kube::ObjectKey(object))}});
    return absl::OkStatus();
  }
  return absl::IsAlreadyExists(created.status()) ? absl::OkStatus() : created.status();
}

absl::Status GitOpsClusterController::EnsureAppSetResources(const std::string& argo_namespace) {
  for (const json& config_map : DuckTypeConfigMaps(argo_namespace)) {
    RETURN_IF_ERROR(CreateIfAbsent(Core("configmaps", argo_namespace), config_map));
  }
  RETURN_IF_ERROR(
      CreateIfAbsent(Rbac("roles", argo_namespace), AppSetPlacementRole(argo_namespace)));
  const kube::ResourceRef bindings = Rbac("rolebindings", argo_namespace);
  auto binding = client_.Get(bindings, AppSetPlacementRbacName(argo_namespace));
  if (binding.ok()) {
    return absl::OkStatus();
  }
  if (!absl::IsNotFound(binding.status())) {
    return binding.status();
  }
  auto accounts = kube::ListAll(client_, Core("serviceaccounts", argo_namespace), {});
  if (!accounts.ok()) {
    return accounts.status();
  }
  return CreateIfAbsent(
      bindings, AppSetPlacementRoleBinding(argo_namespace,
                                           PickAppSetControllerServiceAccount(accounts->items)));
}

absl::Status GitOpsClusterController::WriteClusterSecret(const json& desired) {
  const std::string ns = StringAt(Metadata(desired), "namespace");
  const std::string name = StringAt(Metadata(desired), "name");
  const kube::ResourceRef ref = Core("secrets", ns);
  const kube::WriteOptions options{.field_manager = settings_.field_manager};
  json existing;
  if (kube::ObjectPtr cached = secrets_->Get(ns, name); cached != nullptr) {
    if (ClusterSecretUpToDate(*cached, desired)) {
      return absl::OkStatus();
    }
    existing = *cached;
  } else {
    auto created = client_.Create(ref, desired, options);
    if (created.ok()) {
      Log().Info("cluster secret created", {{"resource", kube::ObjectKey(ns, name)}});
      return absl::OkStatus();
    }
    if (!absl::IsAlreadyExists(created.status())) {
      return created.status();
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
      Log().Info("cluster secret updated", {{"resource", kube::ObjectKey(ns, name)}});
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
