// Test support: the fixture the reconciler's collaborators are tested with, the whole pipeline
// (testing/pipeline_fixture.h) on a fake hub, store, clock and publisher. A test puts
// Applications on the hub (PutApp), starts a dispatcher "process" (Start) and may restart it.
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <memory>
#include <string>
#include <utility>

#include "libs/cloudevents/resource_id.h"
#include "libs/common/testing/fake_clock.h"
#include "libs/kube/testing/fake_kube_client.h"
#include "libs/store/testing/fake_dispatch_store.h"
#include "nlohmann/json.hpp"
#include "services/dispatcher/apps/hub_writes.h"
#include "services/dispatcher/apps/managed_clusters.h"
#include "services/dispatcher/apps/reconciler_settings.h"
#include "services/dispatcher/apps/testing/pipeline_fixture.h"

namespace mmi::dispatcher::testing {

class PipelineTest : public ::testing::Test {
 protected:
  PipelineTest() {
    clusters_.OnAdd(std::make_shared<const nlohmann::json>(ManagedCluster("cluster1")), true);
    clusters_.OnSynced();
  }

  // Creates (or replaces) the Application on the fake hub and mirrors it into the lister.
  nlohmann::json PutApp(const nlohmann::json& app) {
    const std::string ns = app["metadata"]["namespace"];
    const std::string name = app["metadata"]["name"];
    auto existing = hub_.Get(ApplicationsRef(ns), name);
    absl::StatusOr<nlohmann::json> stored;
    if (existing.ok()) {
      nlohmann::json updated = app;
      updated["metadata"]["resourceVersion"] = (*existing)["metadata"]["resourceVersion"];
      stored = hub_.Update(ApplicationsRef(ns), updated, {});
    } else {
      stored = hub_.Create(ApplicationsRef(ns), app, {});
    }
    EXPECT_TRUE(stored.ok()) << stored.status();
    return Sync(ns, name);
  }

  // Mirrors the hub object into the lister and enqueues its key (the informer's job).
  nlohmann::json Sync(const std::string& ns, const std::string& name) {
    auto current = hub_.Get(ApplicationsRef(ns), name);
    if (current.ok()) {
      apps_.Set(*current);
    } else {
      apps_.Remove(ns + "/" + name);
    }
    if (process_) {
      process_->reconciler.Enqueue(ns + "/" + name);
    }
    return current.ok() ? *current : nlohmann::json();
  }

  // `resource_exists`: Maestro's REST look-up (gRPC), none by default.
  Process& Start(ReconcilerSettings settings = {}, DeletionCheck::Lookup resource_exists = nullptr,
                 ManifestDelivery* manifests = nullptr) {
    process_ = std::make_unique<Process>(clock_, store_, hub_, apps_, clusters_, settings,
                                         OutboxSettings{}, std::move(resource_exists), manifests);
    clusters_.SetOnAdded(
        [this](const std::string& cluster) { process_->reconciler.OnClusterAdded(cluster); });
    process_->reconciler.Activate();
    process_->RunAll();
    return *process_;
  }

  // The Applications argocd/<name> on cluster1, dispatched by a process that then stops: a
  // restart follows.
  void DispatchedThenStopped(std::initializer_list<const char*> names) {
    for (const char* name : names) {
      PutApp(PullApp("argocd", name, "cluster1"));
    }
    {
      Process& p = Start();
      ASSERT_EQ(p.publisher.accepted().size(), names.size());
    }
    process_.reset();
  }

  // A process started on `clusters` (cluster1 known, not synced yet), not through Start().
  Process& StartOn(const ManagedClusterTracker& clusters) {
    process_ =
        std::make_unique<Process>(clock_, store_, hub_, apps_, clusters, ReconcilerSettings{});
    process_->reconciler.Activate();
    process_->RunAll();
    return *process_;
  }

  // argocd/guestbook on cluster1, dispatched and then deleted on the hub: its create and delete
  // requests published, the deletion not confirmed.
  Process& StartThenDeleteOnTheHub() {
    PutApp(PullApp("argocd", "guestbook", "cluster1"));
    Process& p = Start();
    EXPECT_TRUE(hub_.Delete(ApplicationsRef("argocd"), "guestbook", {}).ok());
    Sync("argocd", "guestbook");
    p.RunAll();
    EXPECT_EQ(p.publisher.accepted().size(), 2U);
    return p;
  }

  static std::string IdOf(const std::string& cluster, const std::string& ns,
                          const std::string& name) {
    return cloudevents::WorkResourceId("app-work-client", cluster, ns + "-" + name);
  }

  mmi::testing::FakeClock clock_;
  store::testing::FakeDispatchStore store_;
  kube::testing::FakeKubeClient hub_;
  MapLister apps_;
  ManagedClusterTracker clusters_;
  std::unique_ptr<Process> process_;
};

}  // namespace mmi::dispatcher::testing
