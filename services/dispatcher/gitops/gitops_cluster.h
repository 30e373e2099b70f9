// GitOpsCluster reconcile logic that needs no I/O (../shared/spec/hub-apis.md §2.2, §3.4, §4):
// resolving a Placement's decisions, the blank Argo CD cluster secrets of the pull model, the
// `acm-placement` duck-type ConfigMaps, and status conditions. The controller that reads and
// writes the hub lives in gitops_cluster_controller.{h,cc} and calls these.
//
// Pure functions, thread-safe. Objects are JSON as the API server returns them.
#pragma once

#include <chrono>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace mmi::dispatcher {

inline constexpr char kPlacementLabel[] = "cluster.open-cluster-management.io/placement";
inline constexpr char kSecretTypeLabel[] = "argocd.argoproj.io/secret-type";
inline constexpr char kAcmClusterLabel[] = "apps.open-cluster-management.io/acm-cluster";
inline constexpr char kClusterNameLabel[] = "apps.open-cluster-management.io/cluster-name";
inline constexpr char kClusterServerLabel[] = "apps.open-cluster-management.io/cluster-server";
inline constexpr char kDataSourceLabel[] = "apps.open-cluster-management.io/data-source";
inline constexpr char kDefaultManagedServiceAccount[] = "application-manager";

// The parts of a GitOpsCluster spec the pull model uses.
struct GitOpsClusterSpec {
  std::string namespace_;  // the GitOpsCluster's own namespace (Placement lookups)
  std::string name;
  std::string argo_namespace;  // spec.argoServer.argoNamespace
  std::string placement_name;  // spec.placementRef.name
  bool create_blank_cluster_secrets = false;
  std::string managed_service_account = kDefaultManagedServiceAccount;
};

// Validates and extracts the spec: argoNamespace required, placementRef kind Placement with
// apiVersion cluster.open-cluster-management.io/v1beta1 or v1alpha1. kInvalidArgument naming the
// field otherwise.
absl::StatusOr<GitOpsClusterSpec> ParseGitOpsClusterSpec(const nlohmann::json& gitops_cluster);

// The union of non-empty `clusterName`s over every PlacementDecision of one Placement (items of
// a list filtered by the placement label), de-duplicated. Entries with an empty name are "not
// yet scheduled" and skipped. kInvalidArgument for a name that is not a DNS-1123 label.
absl::StatusOr<std::set<std::string>> ResolveDecisions(
    const std::vector<nlohmann::json>& placement_decisions);

// The blank (pull-model) Argo CD cluster secret for `managed_cluster` (a ManagedCluster object):
// name `<cluster>-<msa>-cluster-secret`, stringData name/server `https://<cluster>-control-plane`,
// the ACM labels plus every ManagedCluster label that does not collide.
nlohmann::json BlankClusterSecret(const nlohmann::json& managed_cluster,
                                  const GitOpsClusterSpec& spec);

// `acm-placement` (Placement) and `acm-placementrule` (legacy) ConfigMaps for the generator.
std::vector<nlohmann::json> DuckTypeConfigMaps(const std::string& argo_namespace);

// The cluster name a secret was written for (label, then data/stringData `name`); "" if unknown.
std::string ClusterOfSecret(const nlohmann::json& secret);

// Condition types and reasons (hub-apis §4.2).
inline constexpr char kCondReady[] = "Ready";
inline constexpr char kCondPlacementResolved[] = "PlacementResolved";
inline constexpr char kCondArgoServerVerified[] = "ArgoServerVerified";
inline constexpr char kCondApplicationSetResourcesReady[] = "ApplicationSetResourcesReady";
inline constexpr char kCondPolicyTemplateReady[] = "PolicyTemplateReady";
inline constexpr char kCondClustersRegistered[] = "ClustersRegistered";

// Sets condition `type` in `status.conditions` (list-map keyed by type). lastTransitionTime moves
// only when `status` flips. Returns true when anything changed.
bool SetCondition(nlohmann::json& status, const std::string& type, const std::string& cond_status,
                  const std::string& reason, const std::string& message,
                  std::chrono::system_clock::time_point now);

// Ready = True when every other condition is True, False (ClusterRegistrationFailed) when one is
// False, Unknown (Reconciling) otherwise.
void UpdateReadyCondition(nlohmann::json& status, std::chrono::system_clock::time_point now);

// --- Used by the controller (gitops_cluster_controller.h) ---

inline constexpr char kCondUnknown[] = "Unknown";
inline constexpr char kReasonReconciling[] = "Reconciling";
inline constexpr char kReasonSuccess[] = "Success";
inline constexpr char kReasonNotRequired[] = "NotRequired";
inline constexpr char kReasonPlacementNotFound[] = "PlacementNotFound";
inline constexpr char kReasonArgoServerNotFound[] = "ArgoServerNotFound";
inline constexpr char kReasonInvalidConfiguration[] = "InvalidConfiguration";
inline constexpr char kReasonConfigMapCreationFailed[] = "ConfigMapCreationFailed";
inline constexpr char kReasonPolicyTemplateCreationFailed[] = "PolicyTemplateCreationFailed";
inline constexpr char kReasonClusterRegistrationFailed[] = "ClusterRegistrationFailed";

// Namespace label that authorises a GitOpsCluster of another namespace to write there (§4.4).
inline constexpr char kGitOpsArgoNamespaceLabel[] =
    "apps.open-cluster-management.io/gitops-argo-namespace";
// Labels of the Argo CD server Service the controller probes for (§4.4 step 5).
inline constexpr char kArgoServerServiceSelector[] =
    "app.kubernetes.io/component=server,app.kubernetes.io/part-of=argocd";
// GitOpsCluster annotation that skips that probe.
inline constexpr char kSkipArgoNamespaceVerifyAnnotation[] = "skipArgoNamespaceVerify";

// Adds every always-present condition (§4.2: Ready, PlacementResolved, ArgoServerVerified,
// ApplicationSetResourcesReady, PolicyTemplateReady, ClustersRegistered) that is missing, as
// Unknown/Reconciling. Existing conditions are left alone.
void EnsureConditions(nlohmann::json& status, std::chrono::system_clock::time_point now);

// The status of condition `type` ("" when absent).
std::string ConditionStatus(const nlohmann::json& status, const std::string& type);

// "Added managed clusters [a b c] to gitops namespace X", the cluster list cut at 4096 chars.
std::string AddedClustersMessage(const std::set<std::string>& clusters,
                                 const std::string& argo_namespace);

// Cuts `message` to `max` bytes (the CRD caps condition messages at 32768), marking the cut.
std::string CapMessage(std::string message, size_t max = 32768);

// The secret's data as plain strings: `data` (base64-decoded) overlaid with `stringData`. A
// value that is not valid base64 reads as "".
std::map<std::string, std::string> EffectiveSecretData(const nlohmann::json& secret);

// True when `existing` already is `desired` (a BlankClusterSecret): same type, exactly the
// same labels, and exactly the desired data keys and values. Annotations are not compared.
bool ClusterSecretUpToDate(const nlohmann::json& existing, const nlohmann::json& desired);

// The object to PUT over `existing` so that it becomes `desired`, as upstream does: the new
// labels and data only (old data keys such as `config` are dropped), existing annotations kept
// except kubectl's last-applied-configuration, existing finalizers and owner references kept,
// resourceVersion of `existing` as the precondition.
nlohmann::json ClusterSecretUpdate(const nlohmann::json& existing, const nlohmann::json& desired);

// Argo CD cluster secret (labelled argocd.argoproj.io/secret-type=cluster) that was not written
// by an ACM controller (no acm-cluster=true label).
bool IsNonAcmClusterSecret(const nlohmann::json& secret);

// Role and RoleBinding `<argoNamespace>-applicationset-controller-placement` (§4.6) that let
// the ApplicationSet controller list placementdecisions (and placementrules).
std::string AppSetPlacementRbacName(const std::string& argo_namespace);
nlohmann::json AppSetPlacementRole(const std::string& argo_namespace);
nlohmann::json AppSetPlacementRoleBinding(const std::string& argo_namespace,
                                          const std::string& service_account);

// The ApplicationSet controller's ServiceAccount among `service_accounts` (items of a list in
// argoNamespace): the first labelled app.kubernetes.io/part-of=argocd-applicationset, then
// part-of=argocd, whose name ends in `-applicationset-controller`; else
// `openshift-gitops-applicationset-controller`.
std::string PickAppSetControllerServiceAccount(const std::vector<nlohmann::json>& service_accounts);

}  // namespace mmi::dispatcher
