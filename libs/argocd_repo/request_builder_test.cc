#include "libs/argocd_repo/request_builder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/escaping.h"

namespace mmi::argocd_repo {
namespace {

using nlohmann::json;

json App(json source) {
  return json{{"apiVersion", "argoproj.io/v1alpha1"},
              {"kind", "Application"},
              {"metadata",
               {{"name", "guestbook"},
                {"namespace", "openshift-gitops"},
                {"creationTimestamp", "2026-11-28T00:00:00Z"}}},
              {"spec",
               {{"project", "default"},
                {"source", std::move(source)},
                {"destination",
                 {{"server", "https://kubernetes.default.svc"}, {"namespace", "guestbook"}}}}}};
}

json PlainSource() {
  return json{{"repoURL", "git://127.0.0.1/gl.git"}, {"path", "plain"}, {"targetRevision", "main"}};
}

TEST(BuildManifestRequestTest, BuildsTheRequestTheControllerSendsForAPlainSource) {
  absl::StatusOr<ManifestRequest> request = BuildManifestRequest(App(PlainSource()), "", {});
  ASSERT_TRUE(request.ok()) << request.status();
  const json want = {{"repo", {{"repo", "git://127.0.0.1/gl.git"}}},
                     {"revision", "main"},
                     {"appLabelKey", "app.kubernetes.io/instance"},
                     {"appName", "guestbook"},
                     {"namespace", "guestbook"},
                     {"applicationSource", PlainSource()},
                     {"kustomizeOptions", json::object()},
                     {"kubeVersion", ""},
                     {"apiVersions", json::array()},
                     {"trackingMethod", "annotation"},
                     {"enabledSourceTypes",
                      {{"Directory", true}, {"Helm", true}, {"Kustomize", true}, {"Plugin", true}}},
                     {"helmOptions", {{"valuesFileSchemes", {"https", "http"}}}},
                     {"hasMultipleSources", false},
                     {"projectName", "default"},
                     {"installationID", ""}};
  EXPECT_EQ(request->body, want) << request->body.dump(2);
}

TEST(BuildManifestRequestTest, AResolvedRevisionReplacesTheTargetRevision) {
  absl::StatusOr<ManifestRequest> request =
      BuildManifestRequest(App(PlainSource()), "0123456789abcdef0123456789abcdef01234567", {});
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->body["revision"], "0123456789abcdef0123456789abcdef01234567");
  EXPECT_EQ(request->body["applicationSource"]["targetRevision"], "main");
}

TEST(BuildManifestRequestTest, AnAppOutsideTheControllerNamespaceIsNamedWithItsNamespace) {
  json app = App(PlainSource());
  app["metadata"]["namespace"] = "team-a";
  RenderSettings settings;
  settings.controller_namespace = "argocd";
  absl::StatusOr<ManifestRequest> request = BuildManifestRequest(app, "", settings);
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->body["appName"], "team-a_guestbook");
}

TEST(BuildManifestRequestTest, CarriesTheSettings) {
  RenderSettings settings;
  settings.kube_version = "1.34.4";
  settings.api_versions = {"apps/v1", "apps/v1/Deployment"};
  settings.kustomize_build_options = "--enable-helm";
  settings.tracking_method = "label";
  settings.installation_id = "hub-1";
  settings.enabled_source_types["Helm"] = false;
  absl::StatusOr<ManifestRequest> request = BuildManifestRequest(App(PlainSource()), "", settings);
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->body["kubeVersion"], "1.34.4");
  EXPECT_EQ(request->body["apiVersions"], json({"apps/v1", "apps/v1/Deployment"}));
  EXPECT_EQ(request->body["kustomizeOptions"], json({{"buildOptions", "--enable-helm"}}));
  EXPECT_EQ(request->body["trackingMethod"], "label");
  EXPECT_EQ(request->body["installationID"], "hub-1");
  EXPECT_EQ(request->body["enabledSourceTypes"]["Helm"], false);
}

TEST(BuildManifestRequestTest, EqualSourcesGiveEqualKeysAndOtherAppNamesDoNot) {
  json other = App(PlainSource());
  other["metadata"]["creationTimestamp"] = "2026-11-29T00:00:00Z";
  other["metadata"]["uid"] = "another";
  const auto a = BuildManifestRequest(App(PlainSource()), "", {});
  const auto b = BuildManifestRequest(other, "", {});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->Key(), b->Key());
  other["metadata"]["name"] = "guestbook-2";  // the tracking annotation names the app
  const auto c = BuildManifestRequest(other, "", {});
  ASSERT_TRUE(c.ok());
  EXPECT_NE(a->Key(), c->Key());
}

TEST(BuildManifestRequestTest, UsesAGivenRepository) {
  const json repo = {{"repo", "https://git.example/gl.git"}, {"username", "u"}, {"password", "p"}};
  const auto request = BuildManifestRequest(App(PlainSource()), "", {}, repo);
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->body["repo"], repo);
}

TEST(BuildManifestRequestTest, RefusesMultipleSourcesAndMissingSources) {
  json multi = App(PlainSource());
  multi["spec"].erase("source");
  multi["spec"]["sources"] = json::array({PlainSource(), PlainSource()});
  EXPECT_EQ(BuildManifestRequest(multi, "", {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(BuildManifestRequest(multi, "", {}).status().message()),
              ::testing::HasSubstr("spec.sources"));

  json none = App(PlainSource());
  none["spec"].erase("source");
  EXPECT_THAT(std::string(BuildManifestRequest(none, "", {}).status().message()),
              ::testing::HasSubstr("spec.source: missing"));

  json no_repo = App(json{{"path", "plain"}});
  EXPECT_THAT(std::string(BuildManifestRequest(no_repo, "", {}).status().message()),
              ::testing::HasSubstr("spec.source.repoURL: missing"));
  EXPECT_EQ(BuildManifestRequest(json::array(), "", {}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(SourceToProtoJsonTest, HelmValuesObjectBecomesARawExtension) {
  json source = PlainSource();
  source["helm"] = {{"releaseName", "gl"},
                    {"valuesObject", {{"workload", false}, {"replicas", 2}}},
                    {"parameters", {{{"name", "image.tag"}, {"value", "v2"}}}}};
  absl::StatusOr<json> out = SourceToProtoJson(source);
  ASSERT_TRUE(out.ok()) << out.status();
  std::string raw;
  ASSERT_TRUE(absl::Base64Unescape((*out)["helm"]["valuesObject"]["raw"].get<std::string>(), &raw));
  EXPECT_EQ(json::parse(raw), source["helm"]["valuesObject"]);
  EXPECT_EQ((*out)["helm"]["releaseName"], "gl");
  EXPECT_EQ((*out)["helm"]["parameters"], source["helm"]["parameters"]);
}

TEST(SourceToProtoJsonTest, KustomizeReplicaCountsAndPatchTargetsTakeTheProtoShape) {
  json source = PlainSource();
  source["kustomize"] = {
      {"namePrefix", "kz-"},
      {"replicas", {{{"name", "web"}, {"count", 3}}, {{"name", "db"}, {"count", "2"}}}},
      {"patches",
       {{{"patch", "- op: add"},
         {"target", {{"kind", "Deployment"}, {"name", "web"}, {"labelSelector", "a=b"}}}}}}};
  absl::StatusOr<json> out = SourceToProtoJson(source);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)["kustomize"]["replicas"][0]["count"], json({{"type", 0}, {"intVal", 3}}));
  EXPECT_EQ((*out)["kustomize"]["replicas"][1]["count"], json({{"type", 1}, {"strVal", "2"}}));
  EXPECT_EQ((*out)["kustomize"]["patches"][0]["target"],
            json({{"resId", {{"gvk", {{"kind", "Deployment"}}}, {"name", "web"}}},
                  {"labelSelector", "a=b"}}));
  EXPECT_EQ((*out)["kustomize"]["namePrefix"], "kz-");

  source["kustomize"]["replicas"][0]["count"] = true;
  EXPECT_THAT(std::string(SourceToProtoJson(source).status().message()),
              ::testing::HasSubstr("spec.source.kustomize.replicas[0].count"));
}

TEST(SourceToProtoJsonTest, PluginParameterMapsAndArraysAreWrapped) {
  json source = PlainSource();
  source["plugin"] = {{"name", "kpt"},
                      {"env", {{{"name", "A"}, {"value", "1"}}}},
                      {"parameters",
                       {{{"name", "s"}, {"string", "v"}},
                        {{"name", "m"}, {"map", {{"k", "v"}}}},
                        {{"name", "a"}, {"array", {"x", "y"}}}}}};
  absl::StatusOr<json> out = SourceToProtoJson(source);
  ASSERT_TRUE(out.ok()) << out.status();
  const json& parameters = (*out)["plugin"]["parameters"];
  EXPECT_EQ(parameters[0], json({{"name", "s"}, {"string", "v"}}));
  EXPECT_EQ(parameters[1]["map"], json({{"map", {{"k", "v"}}}}));
  EXPECT_EQ(parameters[2]["array"], json({{"array", {"x", "y"}}}));
}

TEST(BuildResolveRevisionRequestTest, SendsTheSourceAndTheAmbiguousRevision) {
  absl::StatusOr<ResolveRevisionRequest> request =
      BuildResolveRevisionRequest(App(PlainSource()), "");
  ASSERT_TRUE(request.ok()) << request.status();
  const json want = {{"repo", {{"repo", "git://127.0.0.1/gl.git"}}},
                     {"app",
                      {{"metadata", {{"name", "guestbook"}, {"namespace", "openshift-gitops"}}},
                       {"spec", {{"project", "default"}, {"source", PlainSource()}}}}},
                     {"ambiguousRevision", "main"},
                     {"sourceIndex", 0}};
  EXPECT_EQ(request->body, want) << request->body.dump(2);

  json no_revision = PlainSource();
  no_revision.erase("targetRevision");
  EXPECT_EQ(BuildResolveRevisionRequest(App(no_revision), "")->body["ambiguousRevision"], "HEAD");
  EXPECT_EQ(BuildResolveRevisionRequest(App(no_revision), "v1.2")->body["ambiguousRevision"],
            "v1.2");
}

}  // namespace
}  // namespace mmi::argocd_repo
