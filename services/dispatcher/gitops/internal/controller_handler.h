// The GitOpsCluster controller's work queue keys, and how informer events become keys.
// Internal to services/dispatcher/gitops.
#pragma once

#include <functional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "libs/kube/informer.h"
#include "libs/kube_object/object.h"
#include "nlohmann/json.hpp"
#include "services/dispatcher/gitops/gitops_cluster.h"
#include "services/dispatcher/gitops/internal/hub_resources.h"

namespace mmi::dispatcher {
namespace internal {

// Queue keys: one namespace of keys per kind of work.
constexpr char kGitOpsKey[] = "g:";     // g:<ns>/<name>      reconcile one GitOpsCluster
constexpr char kPlacementKey[] = "p:";  // p:<ns>/<placement> GitOpsClusters of a Placement
constexpr char kClusterKey[] = "c:";    // c:<cluster>        GitOpsClusters deciding a cluster
constexpr char kSecretKey[] = "s:";     // s:<ns>/<name>      a secret of ours appeared
constexpr char kOrphansKey[] = "o";     // orphan secret clean-up
constexpr char kResyncKey[] = "r";      // everything (after a queue overflow)

// Maps informer events to queue keys. Runs on informer threads: only calls `enqueue`.
// `managed_by` tells our own secrets from foreign ones.
class ControllerHandler final : public kube::InformerHandler {
 public:
  enum class Kind { kGitOpsCluster, kDecision, kManagedCluster, kSecret };
  using Enqueue = std::function<void(const std::string& key)>;
  ControllerHandler(Kind kind, std::string managed_by, Enqueue enqueue)
      : kind_(kind), managed_by_(std::move(managed_by)), enqueue_(std::move(enqueue)) {}

  void OnAdd(const kube::ObjectPtr& object, bool in_initial_list) override {
    // The loop reconciles everything once all informers have synced.
    if (in_initial_list) {
      return;
    }
    switch (kind_) {
      case Kind::kGitOpsCluster:
        enqueue_(absl::StrCat(kGitOpsKey, kube::ObjectKey(*object)));
        break;
      case Kind::kDecision:
        EnqueuePlacement(*object);
        break;
      case Kind::kManagedCluster:
        enqueue_(absl::StrCat(kClusterKey, kube::StringAt(kube::Metadata(*object), "name")));
        break;
      case Kind::kSecret:
        // Mostly our own creates. One nobody wants any more (its GitOpsCluster changed while
        // the cache lagged) must reach the orphan clean-up; a foreign secret can change a
        // decision (the non-ACM guard).
        if (IsOwned(*object, managed_by_)) {
          enqueue_(absl::StrCat(kSecretKey, kube::ObjectKey(*object)));
        } else {
          EnqueueSecretCluster(*object);
        }
        break;
    }
  }

  void OnUpdate(const kube::ObjectPtr& old_object, const kube::ObjectPtr& new_object) override {
    const nlohmann::json& o = *old_object;
    const nlohmann::json& n = *new_object;
    switch (kind_) {
      case Kind::kGitOpsCluster:
        // Our own status writes come back as updates: only spec and annotation changes count.
        if (kube::FieldAt(o, "spec") != kube::FieldAt(n, "spec") ||
            kube::FieldAt(kube::Metadata(o), "annotations") !=
                kube::FieldAt(kube::Metadata(n), "annotations") ||
            kube::FieldAt(kube::Metadata(o), "deletionTimestamp") !=
                kube::FieldAt(kube::Metadata(n), "deletionTimestamp")) {
          enqueue_(absl::StrCat(kGitOpsKey, kube::ObjectKey(n)));
        }
        break;
      case Kind::kDecision:
        if (kube::FieldAt(o, "status") != kube::FieldAt(n, "status") ||
            kube::Labels(o) != kube::Labels(n)) {
          EnqueuePlacement(o);
          EnqueuePlacement(n);
        }
        break;
      case Kind::kManagedCluster:
        // Heartbeats and status are ignored (and dropped from the cache): labels are copied
        // onto the secrets, deletion makes secrets orphans.
        if (kube::Labels(o) != kube::Labels(n) ||
            kube::FieldAt(kube::Metadata(o), "deletionTimestamp") !=
                kube::FieldAt(kube::Metadata(n), "deletionTimestamp")) {
          enqueue_(absl::StrCat(kClusterKey, kube::StringAt(kube::Metadata(n), "name")));
        }
        break;
      case Kind::kSecret:
        if (kube::Labels(o) != kube::Labels(n) ||
            kube::FieldAt(o, "data") != kube::FieldAt(n, "data") ||
            kube::FieldAt(o, "stringData") != kube::FieldAt(n, "stringData") ||
            kube::FieldAt(o, "type") != kube::FieldAt(n, "type")) {
          EnqueueSecretCluster(o);
          EnqueueSecretCluster(n);
        }
        break;
    }
  }

  void OnDelete(const kube::ObjectPtr& last_state) override {
    switch (kind_) {
      case Kind::kGitOpsCluster:
        enqueue_(absl::StrCat(kGitOpsKey, kube::ObjectKey(*last_state)));
        break;
      case Kind::kDecision:
        EnqueuePlacement(*last_state);
        break;
      case Kind::kManagedCluster:
        enqueue_(absl::StrCat(kClusterKey, kube::StringAt(kube::Metadata(*last_state), "name")));
        enqueue_(kOrphansKey);
        break;
      case Kind::kSecret:
        // Someone deleted a secret we manage: the GitOpsClusters deciding it re-create it.
        EnqueueSecretCluster(*last_state);
        break;
    }
  }

 private:
  void EnqueuePlacement(const nlohmann::json& decision) {
    const std::string placement = kube::Label(decision, kPlacementLabel);
    if (!placement.empty()) {
      enqueue_(absl::StrCat(kPlacementKey, kube::StringAt(kube::Metadata(decision), "namespace"),
                            "/", placement));
    }
  }
  void EnqueueSecretCluster(const nlohmann::json& secret) {
    const std::string cluster = ClusterOfSecret(secret);
    if (!cluster.empty()) {
      enqueue_(absl::StrCat(kClusterKey, cluster));
    }
  }

  const Kind kind_;
  const std::string managed_by_;
  const Enqueue enqueue_;
};

}  // namespace internal
}  // namespace mmi::dispatcher
