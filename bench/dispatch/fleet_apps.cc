#include "bench/dispatch/fleet_apps.h"

#include <algorithm>
#include <memory>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "libs/kube_object/object.h"
#include "services/dispatcher/apps/payload.h"

namespace mmi::bench {
namespace {

using nlohmann::json;

constexpr char kArgoNamespace[] = "openshift-gitops";

std::size_t AppSets(const FleetShape& shape) {
  return std::max<std::size_t>(1, shape.applications / std::max<std::size_t>(1, shape.clusters));
}

}  // namespace

std::string ClusterName(std::size_t c) { return absl::StrFormat("cluster-%04d", c); }

json GeneratedApplication(const FleetShape& shape, std::size_t n) {
  const std::size_t clusters = std::max<std::size_t>(1, shape.clusters);
  const std::string cluster = ClusterName(n % clusters);
  const std::string appset = absl::StrFormat("appset-%03d", n / clusters % AppSets(shape));
  const std::string name = absl::StrCat(cluster, "-", appset, "-", n / clusters);
  return {{"apiVersion", "argoproj.io/v1alpha1"},
          {"kind", "Application"},
          {"metadata",
           {{"name", name},
            {"namespace", kArgoNamespace},
            {"uid", absl::StrFormat("00000000-0000-4000-8000-%012d", n)},
            {"resourceVersion", std::to_string(1000 + n)},
            {"generation", 1},
            {"creationTimestamp", "2026-11-26T05:00:00Z"},
            {"labels", {{dispatcher::kPullLabel, "true"}}},
            {"annotations",
             {{dispatcher::kClusterAnnotation, cluster},
              {dispatcher::kAppNamespaceAnnotation, kArgoNamespace},
              {dispatcher::kSkipReconcileAnnotation, "true"}}},
            {"finalizers", {dispatcher::kResourcesFinalizer}},
            {"ownerReferences",
             {{{"apiVersion", "argoproj.io/v1alpha1"},
               {"kind", "ApplicationSet"},
               {"name", appset},
               {"uid", absl::StrFormat("00000000-0000-4000-9000-%012d", n / clusters)},
               {"controller", true},
               {"blockOwnerDeletion", true}}}}}},
          {"spec",
           {{"project", "default"},
            {"source",
             {{"repoURL", "https://github.com/argoproj/argocd-example-apps.git"},
              {"targetRevision", "HEAD"},
              {"path", absl::StrCat("guestbook-", appset)}}},
            {"destination",
             {{"server", absl::StrCat("https://", cluster, "-control-plane:6443")},
              {"namespace", "guestbook"}}},
            {"syncPolicy",
             {{"automated", {{"prune", true}, {"selfHeal", true}}},
              {"syncOptions", {"CreateNamespace=true"}}}}}}};
}

std::vector<std::size_t> ChangedApplications(const FleetShape& shape, std::size_t count) {
  std::vector<std::size_t> out;
  count = std::min(count, shape.applications);
  for (std::size_t i = 0; i < count; ++i) {
    out.push_back(i * shape.applications / count);
  }
  return out;
}

std::string SyncedLister::KeyOf(const FleetShape& shape, std::size_t n) {
  return kube::ObjectKey(GeneratedApplication(shape, n));
}

SyncedLister::SyncedLister(const FleetShape& shape, const std::vector<std::size_t>& changed) {
  const kube::Transform transform = dispatcher::ApplicationTransform();
  std::vector<std::pair<std::string, kube::ObjectPtr>> entries;
  entries.reserve(shape.applications);
  for (std::size_t n = 0; n < shape.applications; ++n) {
    json app = GeneratedApplication(shape, n);
    if (std::binary_search(changed.begin(), changed.end(), n)) {
      app["spec"]["source"]["targetRevision"] = "v2";
    }
    transform(app);
    std::string key = kube::ObjectKey(app);
    entries.emplace_back(std::move(key), std::make_shared<const json>(std::move(app)));
  }
  std::sort(entries.begin(), entries.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [key, object] : entries) {
    keys_.push_back(std::move(key));
    objects_.push_back(std::move(object));
  }
}

kube::ObjectPtr SyncedLister::Get(std::string_view ns, std::string_view name) const {
  const std::string key = kube::ObjectKey(ns, name);
  const auto it = std::lower_bound(keys_.begin(), keys_.end(), key);
  if (it == keys_.end() || *it != key) {
    return nullptr;
  }
  return objects_[static_cast<std::size_t>(it - keys_.begin())];
}

void AddClusters(const FleetShape& shape, dispatcher::ManagedClusterTracker& tracker) {
  for (std::size_t c = 0; c < std::max<std::size_t>(1, shape.clusters); ++c) {
    const json mc = {{"apiVersion", "cluster.open-cluster-management.io/v1"},
                     {"kind", "ManagedCluster"},
                     {"metadata", {{"name", ClusterName(c)}}},
                     {"spec", {{"hubAcceptsClient", true}}}};
    tracker.OnAdd(std::make_shared<const json>(mc), true);
  }
  tracker.OnSynced();
}

}  // namespace mmi::bench
