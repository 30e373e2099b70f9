#include "services/dispatcher/manifests/sync_order.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "libs/kube_object/object.h"

namespace mmi::dispatcher::manifests {

using kube::ObjectAt;
using kube::StringAt;
using nlohmann::json;

namespace {

// Helm's install order of kinds, which Argo CD's sync uses. Kinds in the list sort before every
// other kind (a custom resource comes after all of them).
constexpr std::array<std::string_view, 35> kKindOrder = {
    "Namespace",
    "NetworkPolicy",
    "ResourceQuota",
    "LimitRange",
    "PodSecurityPolicy",
    "PodDisruptionBudget",
    "ServiceAccount",
    "Secret",
    "SecretList",
    "ConfigMap",
    "StorageClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleList",
    "ClusterRoleBinding",
    "ClusterRoleBindingList",
    "Role",
    "RoleList",
    "RoleBinding",
    "RoleBindingList",
    "Service",
    "DaemonSet",
    "Pod",
    "ReplicationController",
    "ReplicaSet",
    "Deployment",
    "HorizontalPodAutoscaler",
    "StatefulSet",
    "Job",
    "CronJob",
    "IngressClass",
    "Ingress",
    "APIService",
};

int KindRank(std::string_view kind) {
  const auto* it = std::find(kKindOrder.begin(), kKindOrder.end(), kind);
  return it == kKindOrder.end() ? static_cast<int>(kKindOrder.size())
                                : static_cast<int>(it - kKindOrder.begin());
}

std::string Annotation(const json& manifest, std::string_view key) {
  return StringAt(ObjectAt(ObjectAt(manifest, "metadata"), "annotations"), key);
}

// The rank of a sync phase; nullopt for a word that names no hook type.
std::optional<int> HookPhaseRank(std::string_view type) {
  if (type == "PreSync") {
    return -1;
  }
  if (type == "Sync" || type == "Skip" || type == "PostDelete") {
    return 0;  // applied with the sync (Skip and PostDelete are not run as hooks here)
  }
  if (type == "PostSync") {
    return 1;
  }
  if (type == "SyncFail") {
    return 2;
  }
  return std::nullopt;
}

std::optional<int> HelmHookPhaseRank(std::string_view type) {
  if (type == "pre-install" || type == "pre-upgrade") {
    return -1;
  }
  if (type == "post-install" || type == "post-upgrade") {
    return 1;
  }
  return std::nullopt;
}

// The sync phase's rank: that of the first hook type the annotation names (Argo CD's hook
// annotation; Helm's only when Argo CD's names none), else the sync itself.
int PhaseRank(const json& manifest) {
  for (const auto& [key, rank_of] : {std::pair{"argocd.argoproj.io/hook", &HookPhaseRank},
                                     std::pair{"helm.sh/hook", &HelmHookPhaseRank}}) {
    for (absl::string_view type : absl::StrSplit(Annotation(manifest, key), ',')) {
      type = absl::StripAsciiWhitespace(type);
      if (std::optional<int> rank = rank_of(std::string_view(type.data(), type.size()))) {
        return *rank;
      }
    }
  }
  return 0;
}

// A decimal integer as Go's strconv.Atoi reads it (an optional sign, digits, nothing else).
bool ParseInt(std::string_view s, int& out) {
  if (!s.empty() && s.front() == '+') {
    s.remove_prefix(1);
    if (!s.empty() && s.front() == '-') {
      return false;
    }
  }
  if (s.empty()) {
    return false;
  }
  const char* end = s.data() + s.size();
  const auto [ptr, ec] = std::from_chars(s.data(), end, out);
  return ec == std::errc() && ptr == end;
}

int Wave(const json& manifest) {
  int wave = 0;
  if (ParseInt(Annotation(manifest, "argocd.argoproj.io/sync-wave"), wave) ||
      ParseInt(Annotation(manifest, "helm.sh/hook-weight"), wave)) {
    return wave;
  }
  return 0;
}

std::string GroupOf(const json& manifest) {
  const std::string api_version = StringAt(manifest, "apiVersion");
  const size_t slash = api_version.find('/');
  return slash == std::string::npos ? "" : api_version.substr(0, slash);
}

struct Item {
  size_t index;
  int phase;
  int wave;
  int kind;
  std::string name;
};

// Moves each dependency (an object `dep_key` names) up to just before the first object that
// `ref_key` says needs it, as Argo CD's sync does after sorting.
template <typename DepKey, typename RefKey>
void BubbleUpDependencies(std::vector<size_t>& order, const std::vector<json>& manifests,
                          DepKey dep_key, RefKey ref_key) {
  absl::flat_hash_map<std::string, size_t> first_ref;  // dependency key -> position
  for (size_t i = 0; i < order.size(); ++i) {
    const json& m = manifests[order[i]];
    if (std::string key = dep_key(m); !key.empty()) {
      auto it = first_ref.find(key);
      if (it == first_ref.end()) {
        continue;
      }
      const size_t at = it->second;
      std::rotate(order.begin() + static_cast<std::ptrdiff_t>(at),
                  order.begin() + static_cast<std::ptrdiff_t>(i),
                  order.begin() + static_cast<std::ptrdiff_t>(i) + 1);
      for (auto& [unused, position] : first_ref) {
        if (position >= at) {
          ++position;
        }
      }
    } else if (std::string ref = ref_key(m); !ref.empty()) {
      first_ref.try_emplace(std::move(ref), i);
    }
  }
}

}  // namespace

std::vector<size_t> SyncOrder(const std::vector<json>& manifests) {
  std::vector<Item> items;
  items.reserve(manifests.size());
  for (size_t i = 0; i < manifests.size(); ++i) {
    const json& m = manifests[i];
    items.push_back(Item{.index = i,
                         .phase = PhaseRank(m),
                         .wave = Wave(m),
                         .kind = KindRank(StringAt(m, "kind")),
                         .name = StringAt(ObjectAt(m, "metadata"), "name")});
  }
  std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
    return std::tie(a.phase, a.wave, a.kind, a.name) < std::tie(b.phase, b.wave, b.kind, b.name);
  });
  std::vector<size_t> order;
  order.reserve(items.size());
  for (const Item& item : items) {
    order.push_back(item.index);
  }
  // A Namespace before the first object in it.
  BubbleUpDependencies(
      order, manifests,
      [](const json& m) {
        return StringAt(m, "kind") == "Namespace" && GroupOf(m).empty()
                   ? StringAt(ObjectAt(m, "metadata"), "name")
                   : std::string();
      },
      [](const json& m) { return StringAt(ObjectAt(m, "metadata"), "namespace"); });
  // A CRD before the first object of its group and kind.
  BubbleUpDependencies(
      order, manifests,
      [](const json& m) {
        if (StringAt(m, "kind") != "CustomResourceDefinition" ||
            GroupOf(m) != "apiextensions.k8s.io") {
          return std::string();
        }
        const json& spec = ObjectAt(m, "spec");
        const std::string group = StringAt(spec, "group");
        const std::string kind = StringAt(ObjectAt(spec, "names"), "kind");
        return group.empty() || kind.empty() ? std::string() : absl::StrCat(group, "/", kind);
      },
      [](const json& m) { return absl::StrCat(GroupOf(m), "/", StringAt(m, "kind")); });
  return order;
}

}  // namespace mmi::dispatcher::manifests
