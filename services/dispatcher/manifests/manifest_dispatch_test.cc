#include "services/dispatcher/manifests/manifest_dispatch.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "libs/cloudevents/manifest_bundle.h"
#include "libs/status_feedback/feedback_rules.h"
#include "services/dispatcher/manifests/delivery_mode.h"

namespace mmi::dispatcher::manifests {
namespace {

using nlohmann::json;

// A pull-model hub Application in manifest mode, for cluster1.
json HubApp() {
  return json{
      {"apiVersion", "argoproj.io/v1alpha1"},
      {"kind", "Application"},
      {"metadata",
       {{"name", "guestbook"},
        {"namespace", "argocd"},
        {"uid", "3c1f6f1e-0000-4000-8000-000000000001"},
        {"labels", {{kPullLabel, "true"}}},
        {"annotations", {{kClusterAnnotation, "cluster1"}, {kDeliveryAnnotation, "manifests"}}}}},
      {"spec",
       {{"project", "default"},
        {"destination", {{"server", kInClusterServer}, {"namespace", "guestbook"}}},
        {"source",
         {{"repoURL", "https://git.example/apps.git"},
          {"path", "guestbook"},
          {"targetRevision", "main"}}}}}};
}

const std::vector<std::string> kRendered = {
    R"({"apiVersion":"v1","kind":"Service","metadata":{"name":"ui","namespace":"guestbook"},"spec":{"ports":[{"port":80}]}})",
    R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"ui","namespace":"guestbook"},"spec":{"replicas":1}})",
    R"({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"reader"}})",
};

TEST(ManifestDispatchTest,
     CarriesTheManifestsInOrderWithServerSideApplyFeedbackAndForegroundDelete) {
  const PayloadSettings settings;
  auto d = BuildManifestDispatch(HubApp(), kRendered, settings);
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ(d->bundle.manifests.size(), 3U);
  ASSERT_EQ(d->bundle.manifest_configs.size(), 3U);
  // In Argo CD's sync order (sync_order.h): the ClusterRole, the Service, the Deployment.
  const size_t rendered_at[] = {2, 0, 1};
  for (size_t i = 0; i < kRendered.size(); ++i) {
    EXPECT_EQ(d->bundle.manifests[i], json::parse(kRendered[rendered_at[i]])) << i;
    const auto& strategy = d->bundle.manifest_configs[i].update_strategy;
    ASSERT_TRUE(strategy && strategy->server_side_apply) << i;
    EXPECT_EQ(strategy->type, "ServerSideApply");
    EXPECT_TRUE(strategy->server_side_apply->force);
    EXPECT_EQ(strategy->server_side_apply->field_manager, "work-agent");
    EXPECT_TRUE(strategy->server_side_apply->ignore_fields.empty());
  }
  const auto& deployment = d->bundle.manifest_configs[2];
  EXPECT_EQ(
      deployment.resource_identifier,
      (cloudevents::ResourceIdentifier{
          .group = "apps", .resource = "deployments", .name = "ui", .namespace_ = "guestbook"}));
  EXPECT_EQ(deployment.feedback_rules,
            status_feedback::FeedbackRulesFor("apps", "v1", "Deployment"));
  EXPECT_EQ(d->bundle.manifest_configs[1].resource_identifier,
            (cloudevents::ResourceIdentifier{
                .group = "", .resource = "services", .name = "ui", .namespace_ = "guestbook"}));
  EXPECT_EQ(d->bundle.manifest_configs[0].resource_identifier,
            (cloudevents::ResourceIdentifier{.group = "rbac.authorization.k8s.io",
                                             .resource = "clusterroles",
                                             .name = "reader",
                                             .namespace_ = ""}));
  EXPECT_EQ(d->bundle.manifest_configs[0].feedback_rules,
            status_feedback::FeedbackRulesFor("rbac.authorization.k8s.io", "v1", "ClusterRole"));
  ASSERT_TRUE(d->bundle.delete_option.has_value());
  EXPECT_EQ(d->bundle.delete_option->propagation_policy, "Foreground");
  EXPECT_FALSE(d->bundle.delete_option->orphaning_rules.has_value());
  EXPECT_EQ(d->work_meta.annotations.at(kDeliveryAnnotation), "manifests");
  EXPECT_FALSE(d->carries_operation);
  EXPECT_FALSE(d->carries_refresh);
  EXPECT_EQ(d->request_free_hash, d->payload_hash);
}

// The same resource as Application delivery: switching modes, deleting and the status sink all
// find one dispatched_resources row under one id and work name.
TEST(ManifestDispatchTest, KeepsTheResourceIdWorkNameAndLabelsOfApplicationDelivery) {
  const PayloadSettings settings;
  auto manifests = BuildManifestDispatch(HubApp(), kRendered, settings);
  auto application = BuildDispatch(HubApp(), settings);
  ASSERT_TRUE(manifests.ok() && application.ok());
  EXPECT_EQ(manifests->resource_id, application->resource_id);
  EXPECT_EQ(manifests->work_name, application->work_name);
  EXPECT_EQ(manifests->cluster, "cluster1");
  EXPECT_EQ(manifests->work_meta.name, application->work_meta.name);
  EXPECT_EQ(manifests->work_meta.labels, application->work_meta.labels);
  auto annotations = manifests->work_meta.annotations;
  annotations.erase(kDeliveryAnnotation);
  EXPECT_EQ(annotations, application->work_meta.annotations);
  EXPECT_NE(manifests->payload_hash, application->payload_hash);
}

// The revision is no input: a new commit rendering the same output has the same hash (nothing is
// sent), also when the repo-server lists the objects in another order (the bundle has them in
// sync order); any change of the objects changes it.
TEST(ManifestDispatchTest, TheHashFollowsTheRenderedOutputOnly) {
  const PayloadSettings settings;
  const std::string hash = BuildManifestDispatch(HubApp(), kRendered, settings)->payload_hash;
  EXPECT_EQ(BuildManifestDispatch(HubApp(), kRendered, settings)->payload_hash, hash);
  std::vector<std::string> scaled = kRendered;
  scaled[1] =
      R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"ui","namespace":"guestbook"},"spec":{"replicas":2}})";
  EXPECT_NE(BuildManifestDispatch(HubApp(), scaled, settings)->payload_hash, hash);
  std::vector<std::string> reordered = {kRendered[1], kRendered[0], kRendered[2]};
  EXPECT_EQ(BuildManifestDispatch(HubApp(), reordered, settings)->payload_hash, hash);
  // A hub-side change that is not sent (the refresh annotation) changes nothing either.
  json refreshed = HubApp();
  refreshed["metadata"]["annotations"][kRefreshAnnotation] = "hard";
  EXPECT_EQ(BuildManifestDispatch(refreshed, kRendered, settings)->payload_hash, hash);
}

TEST(ManifestDispatchTest, RefusesARenderItCannotDeliverNamingTheManifest) {
  struct Row {
    std::string manifest;
    std::string message_has;
  };
  const std::vector<Row> rows = {
      {"not json", "manifests[1]: the repo-server rendered something that is not a JSON object"},
      {"[1, 2]", "manifests[1]: the repo-server rendered something that is not a JSON object"},
      {R"({"apiVersion":"v1","metadata":{"name":"x"}})", "manifests[1]: needs apiVersion, kind"},
      {R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{}})", "manifests[1]: needs apiVersion"},
      {R"({"kind":"ConfigMap","metadata":{"name":"x"}})", "manifests[1]: needs apiVersion"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.manifest);
    auto d = BuildManifestDispatch(HubApp(), {kRendered[0], row.manifest}, PayloadSettings{});
    ASSERT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(d.status().message().find("Application argocd/guestbook: " + row.message_has),
              std::string::npos)
        << d.status();
  }
  json not_pull = HubApp();
  not_pull["metadata"]["labels"].erase(kPullLabel);
  EXPECT_EQ(BuildManifestDispatch(not_pull, kRendered, PayloadSettings{}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ManifestDispatchTest, GuessesTheResourceWithoutDiscovery) {
  const std::vector<std::pair<std::string, std::string>> rows = {
      {"Deployment", "deployments"},
      {"Service", "services"},
      {"Ingress", "ingresses"},
      {"NetworkPolicy", "networkpolicies"},
      {"Gateway", "gateways"},
      {"ConfigMap", "configmaps"},
      {"StorageClass", "storageclasses"},
      {"Endpoints", "endpoints"},
      {"Policy", "policies"},
      {"", ""},
  };
  for (const auto& [kind, resource] : rows) {
    EXPECT_EQ(GuessResourceOf(kind), resource) << kind;
  }
}

}  // namespace
}  // namespace mmi::dispatcher::manifests
