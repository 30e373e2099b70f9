// Test support: the dispatcher pipeline (reconcile loop + worker pool in manual mode, Outbox,
// Reconciler) on fakes only: FakeDispatchStore, FakeKubeClient as the hub, FakePublisher,
// FakeClock. Tests change hub objects through `hub` and mirror them into the lister with
// Sync(), which also enqueues the key the way the informer handler would.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "libs/common/testing/fake_clock.h"
#include "libs/kube/testing/fake_kube_client.h"
#include "libs/store/testing/fake_dispatch_store.h"
#include "libs/transport/testing/fake_publisher.h"
#include "prometheus/registry.h"
#include "services/dispatcher/hub_writes.h"
#include "services/dispatcher/internal/executor.h"
#include "services/dispatcher/managed_clusters.h"
#include "services/dispatcher/metrics.h"
#include "services/dispatcher/outbox.h"
#include "services/dispatcher/reconciler.h"

namespace mmi::dispatcher::testing {

class MapLister final : public ObjectLister {
 public:
  kube::ObjectPtr Get(std::string_view ns, std::string_view name) const override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = objects_.find(std::string(ns) + "/" + std::string(name));
    return it == objects_.end() ? nullptr : it->second;
  }
  std::vector<kube::ObjectPtr> List() const override {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<kube::ObjectPtr> out;
    for (const auto& [k, v] : objects_) {
      out.push_back(v);
    }
    return out;
  }
  void Set(const nlohmann::json& object) {
    nlohmann::json copy = object;
    ApplicationTransform()(copy);
    std::lock_guard<std::mutex> lock(mu_);
    objects_[kube::ObjectKey(object)] = std::make_shared<const nlohmann::json>(std::move(copy));
  }
  void Remove(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    objects_.erase(key);
  }
  bool synced() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return synced_;
  }
  // Plays an informer whose initial list is not complete yet (false) or is (true, the default).
  void SetSynced(bool synced) {
    std::lock_guard<std::mutex> lock(mu_);
    synced_ = synced;
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, kube::ObjectPtr> objects_;
  bool synced_ = true;
};

// One dispatcher "process": executors, outbox, reconciler. The store, hub, clock and lister are
// shared so a test can restart the process.
struct Process {
  Process(const Clock& clock, store::DispatchStore& store, kube::KubeClient& hub,
          const ObjectLister& apps, const ManagedClusterTracker& clusters,
          ReconcilerSettings settings = {}, OutboxSettings outbox_settings = {})
      : loop(clock, "loop", 0),
        workers(clock, "workers", 0),
        publisher(transport::testing::FakePublisher::Mode::kImmediate),
        metrics(registry, "fake"),
        outbox(loop, workers, store, publisher, clock, metrics, outbox_settings),
        reconciler(
            ReconcilerDeps{loop, workers, store, hub, apps, clusters, outbox, metrics, clock},
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

  internal::Executor loop;
  internal::Executor workers;
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
