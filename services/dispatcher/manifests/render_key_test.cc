#include "services/dispatcher/manifests/render_key.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "libs/argocd_repo/request_builder.h"

namespace mmi::dispatcher::manifests {
namespace {

using argocd_repo::ManifestRequest;
using nlohmann::json;

constexpr int kClusters = 3000;

// The pull-model Application for `cluster`: the one an ApplicationSet generates per cluster, with
// its name after the cluster.
json AppFor(const std::string& cluster, const json& source,
            const std::string& destination_namespace = "guestbook") {
  return json{
      {"metadata", {{"name", absl::StrCat("guestbook-", cluster)}, {"namespace", "argocd"}}},
      {"spec",
       {{"project", "default"},
        {"destination",
         {{"server", "https://kubernetes.default.svc"}, {"namespace", destination_namespace}}},
        {"source", source}}}};
}

ManifestRequest RequestFor(const std::string& cluster, const json& source,
                           const std::string& revision = "sha-1",
                           const std::string& destination_namespace = "guestbook") {
  absl::StatusOr<ManifestRequest> request = argocd_repo::BuildManifestRequest(
      AppFor(cluster, source, destination_namespace), revision, argocd_repo::RenderSettings{});
  EXPECT_TRUE(request.ok()) << request.status();
  return request.ok() ? *request : ManifestRequest{};
}

json Plain() {
  return json{{"repoURL", "https://git.example/apps.git"},
              {"path", "guestbook"},
              {"targetRevision", "main"}};
}

json WithField(json source, const std::string& field, json value) {
  source[field] = std::move(value);
  return source;
}

// Keys of the requests for `clusters` clusters of one source at one revision. The requests of an
// ApplicationSet's Applications differ in the name only; one is built, the others copy it with
// their own name (building 3,000 would make the test slow under the sanitizers, not stronger).
std::set<std::string> KeysForFleet(const json& source, const std::string& detected_type,
                                   int clusters) {
  const ManifestRequest first = RequestFor("cluster0", source);
  std::set<std::string> keys;
  for (int i = 0; i < clusters; ++i) {
    ManifestRequest request = first;
    request.body["appName"] = absl::StrCat("argocd_guestbook-cluster", i);
    keys.insert(RenderKeyOf(request, detected_type));
  }
  return keys;
}

TEST(RenderKeyTest, TheRequestSentCarriesNoTrackingFields) {
  const ManifestRequest built = RequestFor("cluster1", Plain());
  // The builder sets them as the application-controller does...
  ASSERT_TRUE(built.body.contains("appLabelKey"));
  ASSERT_TRUE(built.body.contains("trackingMethod"));
  ASSERT_TRUE(built.body.contains("installationID"));
  // ...and the dispatcher leaves them out, so the repo-server writes no tracking label.
  const ManifestRequest sent = RenderRequestOf(built);
  EXPECT_FALSE(sent.body.contains("appLabelKey"));
  EXPECT_FALSE(sent.body.contains("trackingMethod"));
  EXPECT_FALSE(sent.body.contains("installationID"));
  // Argo CD's instance name: <namespace>_<name> outside the controller's namespace.
  EXPECT_EQ(sent.body["appName"], "argocd_guestbook-cluster1");
  EXPECT_EQ(sent.body["namespace"], "guestbook");
  EXPECT_EQ(sent.body["revision"], "sha-1");
}

// One test per fleet keeps each under a second with the sanitizers on.
TEST(RenderKeyTest, AFleetOnOnePlainSourceHasOneKey) {
  EXPECT_EQ(KeysForFleet(Plain(), "Directory", kClusters).size(), 1U);  // as detected
}

TEST(RenderKeyTest, AFleetOnOneKustomizeSourceHasOneKey) {
  EXPECT_EQ(KeysForFleet(WithField(Plain(), "kustomize", {{"namePrefix", "prod-"}}), "", kClusters)
                .size(),
            1U);
}

TEST(RenderKeyTest, OtherSourcesThatIgnoreTheNameHaveOneKey) {
  EXPECT_EQ(KeysForFleet(WithField(Plain(), "directory", {{"recurse", true}}), "", 300).size(), 1U);
  EXPECT_EQ(KeysForFleet(Plain(), "Kustomize", 300).size(), 1U);
  // Helm with a release name does not use the Application's name either.
  EXPECT_EQ(
      KeysForFleet(WithField(Plain(), "helm", {{"releaseName", "guestbook"}}), "", 300).size(), 1U);
}

TEST(RenderKeyTest, HelmWithoutReleaseNameHasOneKeyPerApplicationName) {
  EXPECT_EQ(
      KeysForFleet(WithField(Plain(), "helm", {{"valueFiles", {"values.yaml"}}}), "", kClusters)
          .size(),
      static_cast<size_t>(kClusters));
  // A path the repo-server detected as a Helm chart.
  EXPECT_EQ(KeysForFleet(Plain(), "Helm", 300).size(), 300U);
}

TEST(RenderKeyTest, TheNameCountsWhereTheSourceUsesIt) {
  struct Row {
    std::string name;
    json source;
    std::string detected;
    AppNameUse want;
  };
  const std::vector<Row> rows = {
      {"directory", WithField(Plain(), "directory", json::object()), "", AppNameUse::kUnused},
      {"detected directory", Plain(), "Directory", AppNameUse::kUnused},
      {"kustomize", WithField(Plain(), "kustomize", json::object()), "", AppNameUse::kUnused},
      {"helm with releaseName", WithField(Plain(), "helm", {{"releaseName", "r"}}), "",
       AppNameUse::kUnused},
      {"helm with empty releaseName", WithField(Plain(), "helm", {{"releaseName", ""}}), "",
       AppNameUse::kUsed},
      {"helm", WithField(Plain(), "helm", json::object()), "", AppNameUse::kUsed},
      {"plugin", WithField(Plain(), "plugin", {{"name", "kpt"}}), "", AppNameUse::kUsed},
      {"detected plugin", Plain(), "Plugin", AppNameUse::kUsed},
      {"kustomize naming $ARGOCD_APP_NAME",
       WithField(Plain(), "kustomize", {{"commonLabels", {{"app", "$ARGOCD_APP_NAME"}}}}), "",
       AppNameUse::kUsed},
      {"jsonnet naming ${ARGOCD_APP_NAME}",
       WithField(
           Plain(), "directory",
           {{"jsonnet", {{"extVars", {{{"name", "app"}, {"value", "${ARGOCD_APP_NAME}"}}}}}}}),
       "", AppNameUse::kUsed},
      {"no type, none detected: could be a chart", Plain(), "", AppNameUse::kUnknown},
      {"the declared type wins over the detected one",
       WithField(Plain(), "kustomize", json::object()), "Helm", AppNameUse::kUnused},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    EXPECT_EQ(AppNameUseOf(RequestFor("cluster1", row.source), row.detected), row.want);
  }
  // Kustomize plugins that may read ARGOCD_APP_NAME from the environment.
  argocd_repo::RenderSettings exec;
  exec.kustomize_build_options = "--enable-alpha-plugins --enable-exec";
  absl::StatusOr<ManifestRequest> with_exec = argocd_repo::BuildManifestRequest(
      AppFor("cluster1", WithField(Plain(), "kustomize", json::object())), "sha-1", exec);
  ASSERT_TRUE(with_exec.ok());
  EXPECT_EQ(AppNameUseOf(*with_exec), AppNameUse::kUsed);
  exec.kustomize_build_options = "--load-restrictor LoadRestrictionsNone";
  with_exec = argocd_repo::BuildManifestRequest(
      AppFor("cluster1", WithField(Plain(), "kustomize", json::object())), "sha-1", exec);
  ASSERT_TRUE(with_exec.ok());
  EXPECT_EQ(AppNameUseOf(*with_exec), AppNameUse::kUnused);

  // Unknown keeps the name: two Applications on an undetected source do not share a key.
  EXPECT_NE(RenderKeyOf(RequestFor("cluster1", Plain())),
            RenderKeyOf(RequestFor("cluster2", Plain())));
}

TEST(RenderKeyTest, RevisionNamespaceAndSourceChangeTheKey) {
  const std::string base = RenderKeyOf(RequestFor("cluster1", Plain()), "Directory");
  EXPECT_EQ(base.size(), 64U);  // SHA-256, hex
  EXPECT_EQ(base, RenderKeyOf(RequestFor("cluster2", Plain()), "Directory"));
  EXPECT_NE(base, RenderKeyOf(RequestFor("cluster1", Plain(), "sha-2"), "Directory"));
  EXPECT_NE(base, RenderKeyOf(RequestFor("cluster1", Plain(), "sha-1", "other"), "Directory"));
  EXPECT_NE(base,
            RenderKeyOf(RequestFor("cluster1", WithField(Plain(), "path", "other")), "Directory"));
  // The source key ignores the name whatever the type.
  EXPECT_EQ(SourceKeyOf(RequestFor("cluster1", Plain())),
            SourceKeyOf(RequestFor("cluster2", Plain())));
  EXPECT_EQ(base, SourceKeyOf(RequestFor("cluster1", Plain())));
}

TEST(RenderKeyTest, TrackingSettingsDoNotChangeTheKey) {
  argocd_repo::RenderSettings label;
  label.tracking_method = "label";
  label.app_label_key = "example.com/instance";
  label.installation_id = "hub-1";
  const json app = AppFor("cluster1", Plain());
  absl::StatusOr<ManifestRequest> a =
      argocd_repo::BuildManifestRequest(app, "sha-1", argocd_repo::RenderSettings{});
  absl::StatusOr<ManifestRequest> b = argocd_repo::BuildManifestRequest(app, "sha-1", label);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(*a, *b);
  EXPECT_EQ(RenderKeyOf(*a, "Helm"), RenderKeyOf(*b, "Helm"));
  EXPECT_EQ(RenderRequestOf(*a), RenderRequestOf(*b));
}

}  // namespace
}  // namespace mmi::dispatcher::manifests
