#include "libs/argocd_repo/internal/repo_server_protos.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "libs/argocd_repo/request_builder.h"

namespace mmi::argocd_repo::internal {
namespace {

using nlohmann::json;

json App(json source) {
  return json{{"metadata", {{"name", "gl"}, {"namespace", "openshift-gitops"}}},
              {"spec",
               {{"project", "default"},
                {"source", std::move(source)},
                {"destination", {{"namespace", "gl"}}}}}};
}

json EverySourceField() {
  return json{{"repoURL", "git://127.0.0.1/gl.git"},
              {"path", "helm"},
              {"targetRevision", "main"},
              {"helm",
               {{"releaseName", "gl"},
                {"valueFiles", {"values.yaml"}},
                {"values", "a: 1\n"},
                {"valuesObject", {{"workload", false}}},
                {"parameters", {{{"name", "x"}, {"value", "1"}, {"forceString", true}}}},
                {"fileParameters", {{{"name", "f"}, {"path", "f.txt"}}}},
                {"skipCrds", true},
                {"namespace", "gl"},
                {"kubeVersion", "1.34.0"},
                {"apiVersions", {"apps/v1"}}}},
              {"kustomize",
               {{"namePrefix", "kz-"},
                {"images", {"nginx:1.27"}},
                {"commonLabels", {{"a", "b"}}},
                {"replicas", {{{"name", "web"}, {"count", 2}}}},
                {"patches",
                 {{{"patch", "[]"},
                   {"target", {{"group", "apps"}, {"kind", "Deployment"}, {"name", "web"}}},
                   {"options", {{"allowNameChange", true}}}}}},
                {"components", {"c"}}}},
              {"directory",
               {{"recurse", true},
                {"include", "*.yaml"},
                {"jsonnet", {{"tlas", {{{"name", "t"}, {"value", "1"}, {"code", true}}}}}}}},
              {"plugin",
               {{"name", "kpt"},
                {"env", {{{"name", "A"}, {"value", "1"}}}},
                {"parameters",
                 {{{"name", "m"}, {"map", {{"k", "v"}}}}, {{"name", "a"}, {"array", {"x"}}}}}}}};
}

TEST(RepoServerProtosTest, TheEmbeddedDescriptorsKnowTheRepoServerMethods) {
  const RepoServerProtos& protos = RepoServerProtos::Get();
  EXPECT_EQ(protos.MethodPath("GenerateManifest"),
            "/repository.RepoServerService/GenerateManifest");
  EXPECT_EQ(protos.MethodPath("ResolveRevision"), "/repository.RepoServerService/ResolveRevision");
  EXPECT_NE(protos.New("repository.ManifestResponse"), nullptr);
}

TEST(RepoServerProtosTest, BuiltRequestsFitRepositoryProtoWithEverySourceField) {
  const RepoServerProtos& protos = RepoServerProtos::Get();
  RenderSettings settings;
  settings.api_versions = {"apps/v1"};
  settings.kustomize_build_options = "--load-restrictor LoadRestrictionsNone";
  absl::StatusOr<ManifestRequest> request =
      BuildManifestRequest(App(EverySourceField()), "abc", settings);
  ASSERT_TRUE(request.ok()) << request.status();
  auto message = protos.FromJson("repository.ManifestRequest", request->body);
  ASSERT_TRUE(message.ok()) << message.status();
  // Every field survives: the message printed back as JSON is the request we built.
  const json back = json::parse(protos.ToJson(**message));
  EXPECT_EQ(back["applicationSource"]["helm"]["valuesObject"],
            request->body["applicationSource"]["helm"]["valuesObject"]);
  EXPECT_EQ(back["applicationSource"]["kustomize"]["patches"][0]["target"]["resId"]["gvk"]["kind"],
            "Deployment");
  EXPECT_EQ(back["applicationSource"]["plugin"]["parameters"][0]["map"]["map"]["k"], "v");
  EXPECT_EQ(back["appName"], "gl");
  EXPECT_EQ(back["revision"], "abc");
  EXPECT_EQ(back["enabledSourceTypes"]["Helm"], true);

  absl::StatusOr<ResolveRevisionRequest> resolve =
      BuildResolveRevisionRequest(App(EverySourceField()), "");
  ASSERT_TRUE(resolve.ok()) << resolve.status();
  auto resolve_message = protos.FromJson("repository.ResolveRevisionRequest", resolve->body);
  ASSERT_TRUE(resolve_message.ok()) << resolve_message.status();
}

TEST(RepoServerProtosTest, AnUnknownFieldIsRefusedNotDropped) {
  json source = EverySourceField();
  source["helm"]["notAField"] = true;
  auto request = BuildManifestRequest(App(source), "", {});
  ASSERT_TRUE(request.ok()) << request.status();
  auto message = RepoServerProtos::Get().FromJson("repository.ManifestRequest", request->body);
  EXPECT_EQ(message.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(message.status().message()), ::testing::HasSubstr("notAField"));
}

TEST(RepoServerProtosTest, AWrongTypeIsRefused) {
  json body = {{"revision", 3}};
  auto message = RepoServerProtos::Get().FromJson("repository.ManifestRequest", body);
  EXPECT_EQ(message.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace mmi::argocd_repo::internal
