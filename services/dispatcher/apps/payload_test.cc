#include "services/dispatcher/apps/payload.h"

#include <gtest/gtest.h>

namespace mmi::dispatcher {
namespace {

using nlohmann::json;

// The hub Application the ApplicationSet controller generates for maestro-protocol.md §2.6.
json GuestbookHubApp() {
  return json::parse(R"({
    "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
    "metadata": {
      "name": "guestbook-cluster1", "namespace": "openshift-gitops",
      "uid": "0b9c6f0e-0000-4000-8000-000000000001", "resourceVersion": "1234", "generation": 7,
      "labels": {"apps.open-cluster-management.io/pull-to-ocm-managed-cluster": "true"},
      "annotations": {
        "apps.open-cluster-management.io/ocm-managed-cluster": "cluster1",
        "argocd.argoproj.io/skip-reconcile": "true"
      },
      "ownerReferences": [{"apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationSet",
        "name": "guestbook-appset", "uid": "6c1d0c1e-1111-4d7a-9d7e-000000000000",
        "controller": true, "blockOwnerDeletion": true}],
      "managedFields": [{"manager": "argocd-applicationset-controller"}]
    },
    "spec": {
      "project": "default",
      "source": {"repoURL": "https://github.com/argoproj/argocd-example-apps.git",
                 "path": "guestbook", "targetRevision": "HEAD"},
      "destination": {"server": "https://cluster1-control-plane", "namespace": "guestbook"},
      "syncPolicy": {"automated": {"prune": true, "selfHeal": true}}
    },
    "status": {"sync": {"status": "Synced"}, "health": {"status": "Healthy"}}
  })");
}

// The `data` of the §2.6 spec event.
json SpecEventData() {
  return json::parse(R"({
    "manifests": [{
      "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
      "metadata": {
        "annotations": {"apps.open-cluster-management.io/hosting-applicationset": "openshift-gitops/guestbook-appset"},
        "labels": {"apps.open-cluster-management.io/application-set": "true"},
        "name": "guestbook-cluster1", "namespace": "openshift-gitops"
      },
      "spec": {
        "destination": {"name": "", "namespace": "guestbook", "server": "https://kubernetes.default.svc"},
        "project": "default",
        "source": {"path": "guestbook", "repoURL": "https://github.com/argoproj/argocd-example-apps.git", "targetRevision": "HEAD"},
        "syncPolicy": {"automated": {"prune": true, "selfHeal": true}}
      }
    }],
    "manifestConfigs": [{
      "resourceIdentifier": {"group": "argoproj.io", "resource": "applications", "name": "guestbook-cluster1", "namespace": "openshift-gitops"},
      "feedbackRules": [{"type": "JSONPaths", "jsonPaths": [{"name": "status", "path": ".status"},
        {"name": "dispatchVersion", "path": ".metadata.annotations.apps\\.open-cluster-management\\.io/dispatch-version"}]}],
      "updateStrategy": {"type": "ServerSideApply", "serverSideApply": {"force": false,
        "ignoreFields": [{"condition": "OnSpokeChange", "jsonPaths": [".operation", ".metadata.annotations[\"argocd.argoproj.io/refresh\"]"]}]}}
    }]
  })");
}

// The upstream controller's bundle, plus one thing of ours: the `dispatchVersion` feedback path
// of the end-to-end acknowledgement (payload.h, kDispatchVersionAnnotation).
TEST(PayloadTest, BuildsExactlyTheSpecEventOfTheUpstreamController) {
  auto d = BuildDispatch(GuestbookHubApp(), PayloadSettings{});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->cluster, "cluster1");
  EXPECT_EQ(d->work_name, "openshift-gitops-guestbook-cluster1");
  EXPECT_EQ(d->resource_id, "278f3a61-efe5-56de-abba-6aedbfcce272");
  EXPECT_EQ(cloudevents::ToJson(d->bundle), SpecEventData());
  ASSERT_TRUE(d->appset.has_value());
  EXPECT_EQ(d->appset->name, "guestbook-appset");

  cloudevents::ObjectMeta meta = d->work_meta;
  meta.resource_version = "0";
  auto text = cloudevents::FormatObjectMeta(meta);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(json::parse(*text), json::parse(R"({"name":"openshift-gitops-guestbook-cluster1",
    "namespace":"cluster1","uid":"278f3a61-efe5-56de-abba-6aedbfcce272","resourceVersion":"0",
    "labels":{"apps.open-cluster-management.io/application-set":"true",
      "apps.open-cluster-management.io/application-set-hash":"d4a2a61253a7e21ee18c0c44dbf604ab52bf4e72"},
    "annotations":{"apps.open-cluster-management.io/hosting-applicationset":"openshift-gitops/guestbook-appset",
      "apps.open-cluster-management.io/hub-application-name":"guestbook-cluster1",
      "apps.open-cluster-management.io/hub-application-namespace":"openshift-gitops"}})"));
  EXPECT_FALSE(d->carries_operation);
  EXPECT_FALSE(d->carries_refresh);
}

TEST(PayloadTest, StampsTheDispatchVersionIntoTheApplicationOnly) {
  auto d = BuildDispatch(GuestbookHubApp(), PayloadSettings{});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_FALSE(
      d->bundle.manifests.front()["metadata"]["annotations"].contains(kDispatchVersionAnnotation));
  const cloudevents::ManifestBundle stamped = StampDispatchVersion(d->bundle, 12);
  EXPECT_EQ(stamped.manifests.front()["metadata"]["annotations"][kDispatchVersionAnnotation], "12");
  EXPECT_EQ(stamped.manifest_configs, d->bundle.manifest_configs);

  cloudevents::ManifestBundle other;
  other.manifests.push_back(
      json::parse(R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}})"));
  EXPECT_EQ(StampDispatchVersion(other, 3).manifests, other.manifests);
}

TEST(PayloadTest, StatusAndBookkeepingChangesKeepThePayloadHash) {
  auto base = BuildDispatch(GuestbookHubApp(), PayloadSettings{});
  json app = GuestbookHubApp();
  app["status"]["health"]["status"] = "Degraded";
  app["metadata"]["resourceVersion"] = "9999";
  app["metadata"]["generation"] = 8;
  app["metadata"]["managedFields"] = json::array();
  auto after = BuildDispatch(app, PayloadSettings{});
  ASSERT_TRUE(base.ok() && after.ok());
  EXPECT_EQ(base->payload_hash, after->payload_hash);
}

TEST(PayloadTest, SpecChangesChangeThePayloadHash) {
  auto base = BuildDispatch(GuestbookHubApp(), PayloadSettings{});
  json app = GuestbookHubApp();
  app["spec"]["source"]["targetRevision"] = "v2";
  auto after = BuildDispatch(app, PayloadSettings{});
  ASSERT_TRUE(base.ok() && after.ok());
  EXPECT_NE(base->payload_hash, after->payload_hash);
}

TEST(PayloadTest, PropagatesOperationAndRefreshAndDropsOcmKeys) {
  json app = GuestbookHubApp();
  app["operation"] = {{"sync", {{"revision", "HEAD"}}}, {"initiatedBy", {{"username", "alice"}}}};
  app["metadata"]["annotations"][kRefreshAnnotation] = "hard";
  app["metadata"]["annotations"][kAppNamespaceAnnotation] = "argocd";
  app["metadata"]["finalizers"] = {kResourcesFinalizer};
  auto d = BuildDispatch(app, PayloadSettings{});
  ASSERT_TRUE(d.ok()) << d.status();
  const json& spoke = d->bundle.manifests.at(0);
  EXPECT_EQ(spoke["operation"]["sync"]["revision"], "HEAD");
  EXPECT_EQ(spoke["metadata"]["annotations"][kRefreshAnnotation], "hard");
  EXPECT_EQ(spoke["metadata"]["namespace"], "argocd");
  EXPECT_EQ(spoke["metadata"]["finalizers"], json::array({kResourcesFinalizer}));
  EXPECT_FALSE(spoke["metadata"]["annotations"].contains(kClusterAnnotation));
  EXPECT_FALSE(spoke["metadata"]["annotations"].contains(kAppNamespaceAnnotation));
  EXPECT_FALSE(spoke["metadata"]["annotations"].contains(kSkipReconcileAnnotation));
  EXPECT_FALSE(spoke.contains("status"));
  EXPECT_EQ(d->bundle.manifest_configs.at(0).resource_identifier.namespace_, "argocd");
  EXPECT_TRUE(d->carries_operation);
  EXPECT_TRUE(d->carries_refresh);
}

TEST(PayloadTest, StandaloneApplicationsKeepThePullLabelOnTheWork) {
  json app = GuestbookHubApp();
  app["metadata"].erase("ownerReferences");
  auto d = BuildDispatch(app, PayloadSettings{});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_FALSE(d->appset.has_value());
  EXPECT_EQ(d->work_meta.labels.at(kPullLabel), "true");
  EXPECT_FALSE(d->bundle.manifests.at(0)["metadata"].contains("labels"));
}

TEST(PayloadTest, SelectsOnlyPullModelApplications) {
  json app = GuestbookHubApp();
  EXPECT_EQ(PullModelCluster(app), "cluster1");
  app["metadata"]["labels"][kPullLabel] = "TRUE";
  EXPECT_EQ(PullModelCluster(app), "cluster1");
  app["metadata"]["labels"][kPullLabel] = "yes";  // not a Go bool
  EXPECT_EQ(PullModelCluster(app), std::nullopt);
  app["metadata"]["labels"][kPullLabel] = "true";
  app["metadata"]["annotations"][kClusterAnnotation] = "";
  EXPECT_EQ(PullModelCluster(app), std::nullopt);
  EXPECT_EQ(PullModelCluster(json::parse("[1,2]")), std::nullopt);
  EXPECT_EQ(PullModelCluster(json::parse(R"({"metadata": {"labels": 5}})")), std::nullopt);
}

TEST(PayloadTest, RejectsHostileClusterNamesWithAClearError) {
  for (const char* bad : {"Cluster1", "../etc", "a/b", "cluster_1", "-x", "+", "#"}) {
    json app = GuestbookHubApp();
    app["metadata"]["annotations"][kClusterAnnotation] = bad;
    auto d = BuildDispatch(app, PayloadSettings{});
    EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace mmi::dispatcher
