#include "services/dispatcher/gitops/gitops_cluster.h"

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "libs/kube_object/object.h"

namespace mmi::dispatcher {

using kube::IsDns1123Label;
using kube::KubeTime;
using kube::ObjectAt;
using kube::StringAt;
using nlohmann::json;

absl::StatusOr<GitOpsClusterSpec> ParseGitOpsClusterSpec(const json& gitops_cluster) {
  const json& meta = ObjectAt(gitops_cluster, "metadata");
  const json& spec = ObjectAt(gitops_cluster, "spec");
  GitOpsClusterSpec out;
  out.namespace_ = StringAt(meta, "namespace");
  out.name = StringAt(meta, "name");
  const std::string where = absl::StrCat("GitOpsCluster ", out.namespace_, "/", out.name);
  out.argo_namespace = StringAt(ObjectAt(spec, "argoServer"), "argoNamespace");
  if (out.argo_namespace.empty() || !IsDns1123Label(out.argo_namespace)) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": spec.argoServer.argoNamespace must be a namespace name, got '",
                     out.argo_namespace, "'"));
  }
  const json& ref = ObjectAt(spec, "placementRef");
  const std::string kind = StringAt(ref, "kind");
  const std::string api_version = StringAt(ref, "apiVersion");
  if (kind != "Placement" || (api_version != "cluster.open-cluster-management.io/v1beta1" &&
                              api_version != "cluster.open-cluster-management.io/v1alpha1")) {
    return absl::InvalidArgumentError(
        absl::StrCat(where,
                     ": spec.placementRef must be kind Placement, apiVersion "
                     "cluster.open-cluster-management.io/v1beta1 (got kind '",
                     kind, "', apiVersion '", api_version, "')"));
  }
  out.placement_name = StringAt(ref, "name");
  if (out.placement_name.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": spec.placementRef.name is empty"));
  }
  // The name becomes a label selector value (cluster.open-cluster-management.io/placement=...).
  if (!IsDns1123Label(out.placement_name)) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": spec.placementRef.name must be a Placement name, got '",
                     out.placement_name, "'"));
  }
  auto blank = spec.find("createBlankClusterSecrets");
  out.create_blank_cluster_secrets =
      blank != spec.end() && blank->is_boolean() && blank->get<bool>();
  auto addon = ObjectAt(spec, "gitopsAddon").find("enabled");
  if (addon != ObjectAt(spec, "gitopsAddon").end() && addon->is_boolean() && addon->get<bool>()) {
    out.create_blank_cluster_secrets = true;
  }
  const std::string msa = StringAt(spec, "managedServiceAccountRef");
  if (!msa.empty()) {
    out.managed_service_account = msa;
  }
  return out;
}

absl::StatusOr<std::set<std::string>> ResolveDecisions(
    const std::vector<json>& placement_decisions) {
  std::set<std::string> clusters;
  for (const json& pd : placement_decisions) {
    auto decisions = ObjectAt(pd, "status").find("decisions");
    if (decisions == ObjectAt(pd, "status").end() || !decisions->is_array()) {
      continue;
    }
    for (const json& d : *decisions) {
      const std::string name = StringAt(d, "clusterName");
      if (name.empty()) {
        continue;
      }
      if (!IsDns1123Label(name)) {
        return absl::InvalidArgumentError(
            absl::StrCat("PlacementDecision ", StringAt(ObjectAt(pd, "metadata"), "name"),
                         ": clusterName '", name, "' is not a valid cluster name"));
      }
      clusters.insert(name);
    }
  }
  return clusters;
}

json BlankClusterSecret(const json& managed_cluster, const GitOpsClusterSpec& spec) {
  const std::string cluster = StringAt(ObjectAt(managed_cluster, "metadata"), "name");
  json labels = json::object();
  for (const auto& [k, v] : ObjectAt(ObjectAt(managed_cluster, "metadata"), "labels").items()) {
    if (v.is_string()) {
      labels[k] = v;
    }
  }
  labels[kSecretTypeLabel] = "cluster";
  labels[kAcmClusterLabel] = "true";
  labels[kClusterNameLabel] = cluster;
  labels[kClusterServerLabel] = absl::StrCat(cluster, "-control-plane").substr(0, 63);
  labels[kDataSourceLabel] = "blank";
  return {{"apiVersion", "v1"},
          {"kind", "Secret"},
          {"type", "Opaque"},
          {"metadata",
           {{"name", absl::StrCat(cluster, "-", spec.managed_service_account, "-cluster-secret")},
            {"namespace", spec.argo_namespace},
            {"labels", std::move(labels)}}},
          {"stringData",
           {{"name", cluster}, {"server", absl::StrCat("https://", cluster, "-control-plane")}}}};
}

std::vector<json> DuckTypeConfigMaps(const std::string& argo_namespace) {
  const auto make = [&](const char* name, const char* api_version, const char* kind) {
    return json{{"apiVersion", "v1"},
                {"kind", "ConfigMap"},
                {"metadata", {{"name", name}, {"namespace", argo_namespace}}},
                {"data",
                 {{"apiVersion", api_version},
                  {"kind", kind},
                  {"statusListKey", "decisions"},
                  {"matchKey", "clusterName"}}}};
  };
  return {make("acm-placement", "cluster.open-cluster-management.io/v1beta1", "placementdecisions"),
          make("acm-placementrule", "apps.open-cluster-management.io/v1", "placementrules")};
}

std::string ClusterOfSecret(const json& secret) {
  std::string name = StringAt(ObjectAt(ObjectAt(secret, "metadata"), "labels"), kClusterNameLabel);
  if (!name.empty()) {
    return name;
  }
  name = StringAt(ObjectAt(secret, "stringData"), "name");
  if (!name.empty()) {
    return name;
  }
  const std::string encoded = StringAt(ObjectAt(secret, "data"), "name");
  if (encoded.empty()) {
    return "";
  }
  // base64 decode (Secret data values are standard base64).
  static constexpr std::string_view kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : encoded) {
    if (c == '=') {
      break;
    }
    const auto pos = kAlphabet.find(c);
    if (pos == std::string_view::npos) {
      return "";
    }
    acc = (acc << 6) | static_cast<uint32_t>(pos);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  return out;
}

bool SetCondition(json& status, const std::string& type, const std::string& cond_status,
                  const std::string& reason, const std::string& message,
                  std::chrono::system_clock::time_point now) {
  if (!status.is_object()) {
    status = json::object();
  }
  json& conditions = status["conditions"];
  if (!conditions.is_array()) {
    conditions = json::array();
  }
  for (json& c : conditions) {
    if (StringAt(c, "type") != type) {
      continue;
    }
    bool changed = false;
    if (StringAt(c, "status") != cond_status) {
      c["status"] = cond_status;
      c["lastTransitionTime"] = KubeTime(now);
      changed = true;
    }
    if (StringAt(c, "reason") != reason) {
      c["reason"] = reason;
      changed = true;
    }
    if (StringAt(c, "message") != message) {
      c["message"] = message;
      changed = true;
    }
    return changed;
  }
  conditions.push_back({{"type", type},
                        {"status", cond_status},
                        {"reason", reason},
                        {"message", message},
                        {"lastTransitionTime", KubeTime(now)}});
  return true;
}

void UpdateReadyCondition(json& status, std::chrono::system_clock::time_point now) {
  bool any_false = false;
  bool all_true = true;
  std::string failed;
  if (status.is_object() && status.contains("conditions") && status["conditions"].is_array()) {
    for (const json& c : status["conditions"]) {
      if (StringAt(c, "type") == kCondReady) {
        continue;
      }
      const std::string s = StringAt(c, "status");
      if (s == "False") {
        any_false = true;
        if (failed.empty()) {
          failed = StringAt(c, "type");
        }
      }
      if (s != "True") {
        all_true = false;
      }
    }
  }
  if (any_false) {
    SetCondition(status, kCondReady, "False", "ClusterRegistrationFailed",
                 absl::StrCat("condition ", failed, " is False"), now);
  } else if (all_true) {
    SetCondition(status, kCondReady, "True", "Success", "all conditions are true", now);
  } else {
    SetCondition(status, kCondReady, "Unknown", "Reconciling", "reconciling", now);
  }
}

void EnsureConditions(json& status, std::chrono::system_clock::time_point now) {
  for (const char* type :
       {kCondReady, kCondPlacementResolved, kCondArgoServerVerified,
        kCondApplicationSetResourcesReady, kCondPolicyTemplateReady, kCondClustersRegistered}) {
    if (ConditionStatus(status, type).empty()) {
      SetCondition(status, type, kCondUnknown, kReasonReconciling, "reconciling", now);
    }
  }
}

std::string ConditionStatus(const json& status, const std::string& type) {
  if (!status.is_object() || !status.contains("conditions") || !status["conditions"].is_array()) {
    return "";
  }
  for (const json& c : status["conditions"]) {
    if (StringAt(c, "type") == type) {
      return StringAt(c, "status");
    }
  }
  return "";
}

std::string AddedClustersMessage(const std::set<std::string>& clusters,
                                 const std::string& argo_namespace) {
  constexpr size_t kMaxList = 4096;
  std::string list = absl::StrJoin(clusters, " ");
  if (list.size() > kMaxList) {
    list.resize(kMaxList);
    list += "...";
  }
  return absl::StrCat("Added managed clusters [", list, "] to gitops namespace ", argo_namespace);
}

std::string CapMessage(std::string message, size_t max) {
  constexpr std::string_view kCut = "...(truncated)";
  if (message.size() > max && max > kCut.size()) {
    message.resize(max - kCut.size());
    message += kCut;
  }
  return message;
}

std::map<std::string, std::string> EffectiveSecretData(const json& secret) {
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : ObjectAt(secret, "data").items()) {
    std::string decoded;
    if (v.is_string() && absl::Base64Unescape(v.get<std::string>(), &decoded)) {
      out[k] = std::move(decoded);
    } else {
      out[k] = "";
    }
  }
  for (const auto& [k, v] : ObjectAt(secret, "stringData").items()) {
    out[k] = v.is_string() ? v.get<std::string>() : "";
  }
  return out;
}

bool ClusterSecretUpToDate(const json& existing, const json& desired) {
  if (StringAt(existing, "type") != StringAt(desired, "type")) {
    return false;
  }
  if (ObjectAt(ObjectAt(existing, "metadata"), "labels") !=
      ObjectAt(ObjectAt(desired, "metadata"), "labels")) {
    return false;
  }
  return EffectiveSecretData(existing) == EffectiveSecretData(desired);
}

json ClusterSecretUpdate(const json& existing, const json& desired) {
  json out = desired;
  const json& old_meta = ObjectAt(existing, "metadata");
  json& meta = out["metadata"];
  meta["resourceVersion"] = StringAt(old_meta, "resourceVersion");
  json annotations = ObjectAt(old_meta, "annotations");
  annotations.erase("kubectl.kubernetes.io/last-applied-configuration");
  for (const auto& [k, v] : ObjectAt(meta, "annotations").items()) {
    annotations[k] = v;
  }
  if (!annotations.empty()) {
    meta["annotations"] = std::move(annotations);
  }
  for (const char* key : {"finalizers", "ownerReferences"}) {
    auto it = old_meta.find(key);
    if (it != old_meta.end() && it->is_array() && !it->empty()) {
      meta[key] = *it;
    }
  }
  out.erase("data");
  return out;
}

bool IsNonAcmClusterSecret(const json& secret) {
  const json& labels = ObjectAt(ObjectAt(secret, "metadata"), "labels");
  return StringAt(labels, kSecretTypeLabel) == "cluster" &&
         StringAt(labels, kAcmClusterLabel) != "true";
}

std::string AppSetPlacementRbacName(const std::string& argo_namespace) {
  return absl::StrCat(argo_namespace, "-applicationset-controller-placement");
}

json AppSetPlacementRole(const std::string& argo_namespace) {
  return {{"apiVersion", "rbac.authorization.k8s.io/v1"},
          {"kind", "Role"},
          {"metadata",
           {{"name", AppSetPlacementRbacName(argo_namespace)}, {"namespace", argo_namespace}}},
          {"rules",
           {{{"apiGroups", {"apps.open-cluster-management.io"}},
             {"resources", {"placementrules"}},
             {"verbs", {"list"}}},
            {{"apiGroups", {"cluster.open-cluster-management.io"}},
             {"resources", {"placementdecisions"}},
             {"verbs", {"list"}}}}}};
}

json AppSetPlacementRoleBinding(const std::string& argo_namespace,
                                const std::string& service_account) {
  return {
      {"apiVersion", "rbac.authorization.k8s.io/v1"},
      {"kind", "RoleBinding"},
      {"metadata",
       {{"name", AppSetPlacementRbacName(argo_namespace)}, {"namespace", argo_namespace}}},
      {"roleRef",
       {{"apiGroup", "rbac.authorization.k8s.io"},
        {"kind", "Role"},
        {"name", AppSetPlacementRbacName(argo_namespace)}}},
      {"subjects",
       {{{"kind", "ServiceAccount"}, {"name", service_account}, {"namespace", argo_namespace}}}}};
}

std::string PickAppSetControllerServiceAccount(const std::vector<json>& service_accounts) {
  for (const char* part_of : {"argocd-applicationset", "argocd"}) {
    for (const json& sa : service_accounts) {
      const json& meta = ObjectAt(sa, "metadata");
      const std::string name = StringAt(meta, "name");
      if (StringAt(ObjectAt(meta, "labels"), "app.kubernetes.io/part-of") == part_of &&
          absl::EndsWith(name, "-applicationset-controller")) {
        return name;
      }
    }
  }
  return "openshift-gitops-applicationset-controller";
}

}  // namespace mmi::dispatcher
