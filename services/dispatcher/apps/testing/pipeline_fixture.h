// Test support: the dispatcher pipeline (reconcile loop + worker pool, never started: the test
// runs their tasks, Outbox, Reconciler) on fakes only: FakeDispatchStore, FakeKubeClient as the
// hub, FakePublisher, FakeClock. Tests change hub objects through `hub` and mirror them into the
// lister with Sync(), which also enqueues the key the way the informer handler would.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "libs/common/loop.h"
#include "libs/common/testing/fake_clock.h"
#include "libs/kube/testing/fake_kube_client.h"
#include "libs/store/testing/fake_dispatch_store.h"
#include "libs/transport/testing/fake_publisher.h"
#include "prometheus/registry.h"
#include "services/dispatcher/apps/hub_writes.h"
#include "services/dispatcher/apps/managed_clusters.h"
#include "services/dispatcher/apps/metrics.h"
#include "services/dispatcher/apps/outbox.h"
#include "services/dispatcher/apps/reconciler.h"

namespace mmi::dispatcher::testing {

class MapLister final : public ObjectLister {
 public:
  kube::ObjectPtr Get(std::string_view ns, std::string_view name) const override {
    absl::MutexLock lock(&mu_);
    auto it = objects_.find(std::string(ns) + "/" + std::string(name));
    return it == objects_.end() ? nullptr : it->second;
  }
  std::vector<std::string> Keys() const override {
    absl::MutexLock lock(&mu_);
    std::vector<std::string> out;
    for (const auto& [k, v] : objects_) {
      out.push_back(k);
    }
    return out;
  }
  std::vector<kube::ObjectPtr> List() const override {
    absl::MutexLock lock(&mu_);
    std::vector<kube::ObjectPtr> out;
    for (const auto& [k, v] : objects_) {
      out.push_back(v);
    }
    return out;
  }
  void Set(const nlohmann::json& object) {
    nlohmann::json copy = object;
    ApplicationTransform()(copy);
    absl::MutexLock lock(&mu_);
    objects_[kube::ObjectKey(object)] = std::make_shared<const nlohmann::json>(std::move(copy));
  }
  void Remove(const std::string& key) {
    absl::MutexLock lock(&mu_);
    objects_.erase(key);
  }
  bool synced() const override {
    absl::MutexLock lock(&mu_);
    return synced_;
  }
  // Plays an informer whose initial list is not complete yet (false) or is (true, the default).
  void SetSynced(bool synced) {
    absl::MutexLock lock(&mu_);
    synced_ = synced;
  }

 private:
  mutable absl::Mutex mu_;
  std::map<std::string, kube::ObjectPtr> objects_ ABSL_GUARDED_BY(mu_);
  bool synced_ ABSL_GUARDED_BY(mu_) = true;
};

// One dispatcher "process": executors, outbox, reconciler. The store, hub, clock and lister are
// shared so a test can restart the process.
struct Process {
  Process(const Clock& clock, store::DispatchStore& store, kube::KubeClient& hub,
          const ObjectLister& apps, const ManagedClusterTracker& clusters,
          ReconcilerSettings settings = {}, OutboxSettings outbox_settings = {},
          DeletionCheck::Lookup resource_exists = nullptr, ManifestDelivery* manifests = nullptr)
      : loop(clock, "loop"),
        workers(clock, "workers", 1),
        publisher(transport::testing::FakePublisher::Mode::kImmediate),
        metrics(registry, "fake"),
        outbox(loop, workers, store, publisher, clock, metrics, outbox_settings),
        reconciler(ReconcilerDeps{loop, workers, store, hub, apps, clusters, outbox, metrics, clock,
                                  std::move(resource_exists), manifests},
                   std::move(settings)) {
    EXPECT_TRUE(publisher.Start().ok());
  }
  void RunAll() {
    for (int i = 0; i < 10'000; ++i) {
      if (loop.RunUntilIdleForTest() + workers.RunUntilIdleForTest() == 0) {
        return;
      }
    }
    ADD_FAILURE() << "executors never went idle";
  }

  Loop loop;
  WorkerPool workers;
  transport::testing::FakePublisher publisher;
  prometheus::Registry registry;
  DispatcherMetrics metrics;
  Outbox outbox;
  Reconciler reconciler;
};

inline nlohmann::json PullApp(const std::string& ns, const std::string& name,
                              const std::string& cluster) {
  return {{"apiVersion", "argoproj.io/v1alpha1"},
          {"kind", "Application"},
          {"metadata",
           {{"name", name},
            {"namespace", ns},
            {"labels", {{kPullLabel, "true"}}},
            {"annotations", {{kClusterAnnotation, cluster}, {kSkipReconcileAnnotation, "true"}}},
            {"finalizers", {kResourcesFinalizer}}}},
          {"spec",
           {{"project", "default"},
            {"source",
             {{"repoURL", "https://git.example.com/apps.git"},
              {"path", "guestbook"},
              {"targetRevision", "main"}}},
            {"destination",
             {{"server", "https://" + cluster + "-control-plane"}, {"namespace", "guestbook"}}}}}};
}

inline nlohmann::json ManagedCluster(const std::string& name, bool local_label = false) {
  nlohmann::json mc = {{"apiVersion", "cluster.open-cluster-management.io/v1"},
                       {"kind", "ManagedCluster"},
                       {"metadata", {{"name", name}}},
                       {"spec", {{"hubAcceptsClient", true}}}};
  if (local_label) {
    mc["metadata"]["labels"] = {{kLocalClusterLabel, "true"}};
  }
  return mc;
}

}  // namespace mmi::dispatcher::testing
