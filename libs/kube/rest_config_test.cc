#include "libs/kube/rest_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace mmi::kube {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kCaPem[] = "-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n";
constexpr char kCertPem[] = "-----BEGIN CERTIFICATE-----\nCERT\n-----END CERTIFICATE-----\n";
constexpr char kKeyPem[] = "-----BEGIN EC PRIVATE KEY-----\nKEY\n-----END EC PRIVATE KEY-----\n";

class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::path(::testing::TempDir()) /
            absl::StrCat("rest_config_", info->name(), "_", getpid());
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string Write(const std::string& name, const std::string& content) const {
    const auto file = path_ / name;
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file) << content;
    return file.string();
  }
  std::string Path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

std::string InlineKubeconfig() {
  return absl::StrCat(R"(apiVersion: v1
kind: Config
clusters:
- name: hub
  cluster:
    server: https://127.0.0.1:6443/
    certificate-authority-data: )",
                      absl::Base64Escape(kCaPem), R"(
- name: other
  cluster:
    server: https://other.example:443
    insecure-skip-tls-verify: true
    tls-server-name: kubernetes.default
users:
- name: admin
  user:
    client-certificate-data: )",
                      absl::Base64Escape(kCertPem), R"(
    client-key-data: )",
                      absl::Base64Escape(kKeyPem), R"(
- name: robot
  user:
    token: s3cr3t
    as: someone
    as-groups: [g1, g2]
contexts:
- name: hub-admin
  context: {cluster: hub, user: admin}
- name: other-robot
  context: {cluster: other, user: robot, namespace: argocd}
current-context: hub-admin
)");
}

TEST(ParseKubeconfigTest, UsesTheCurrentContextWithInlineCertificateData) {
  auto config = ParseKubeconfig(InlineKubeconfig(), {});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server, "https://127.0.0.1:6443");
  EXPECT_EQ(config->tls.ca_data, kCaPem);
  EXPECT_EQ(config->tls.cert_data, kCertPem);
  EXPECT_EQ(config->tls.key_data, kKeyPem);
  EXPECT_FALSE(config->tls.insecure_skip_verify);
  EXPECT_EQ(config->bearer_token, "");
  EXPECT_EQ(config->namespace_name, "default");
}

TEST(ParseKubeconfigTest, UsesANamedContextWithTokenImpersonationAndNamespace) {
  auto config = ParseKubeconfig(InlineKubeconfig(), {.context = "other-robot", .base_dir = ""});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server, "https://other.example:443");
  EXPECT_TRUE(config->tls.insecure_skip_verify);
  EXPECT_EQ(config->tls.server_name, "kubernetes.default");
  EXPECT_EQ(config->bearer_token, "s3cr3t");
  EXPECT_EQ(config->impersonate_user, "someone");
  EXPECT_THAT(config->impersonate_groups, ElementsAre("g1", "g2"));
  EXPECT_EQ(config->namespace_name, "argocd");
  EXPECT_THAT(DescribeForLog(*config), ::testing::Not(HasSubstr("s3cr3t")));
}

TEST(ParseKubeconfigTest, ResolvesRelativeFilePathsAgainstTheBaseDirectory) {
  const std::string yaml = R"(
clusters:
- name: c
  cluster: {server: "https://h:1", certificate-authority: pki/ca.crt}
users:
- name: u
  user: {client-certificate: pki/admin.crt, client-key: /abs/admin.key, tokenFile: ../token}
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
)";
  auto config = ParseKubeconfig(yaml, {.context = "", .base_dir = "/etc/kube"});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->tls.ca_file, "/etc/kube/pki/ca.crt");
  EXPECT_EQ(config->tls.cert_file, "/etc/kube/pki/admin.crt");
  EXPECT_EQ(config->tls.key_file, "/abs/admin.key");
  EXPECT_EQ(config->bearer_token_file, "/etc/token");
}

TEST(ParseKubeconfigTest, RejectsAnUnknownContextAndListsTheKnownOnes) {
  auto config = ParseKubeconfig(InlineKubeconfig(), {.context = "nope", .base_dir = ""});
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(config.status().message()), HasSubstr("'nope' not found"));
  EXPECT_THAT(std::string(config.status().message()), HasSubstr("hub-admin"));
}

TEST(ParseKubeconfigTest, NamesTheFieldWithBadBase64) {
  const std::string yaml = R"(
clusters: [{name: c, cluster: {server: "https://h:1", certificate-authority-data: "%%%"}}]
contexts: [{name: x, context: {cluster: c}}]
current-context: x
)";
  auto config = ParseKubeconfig(yaml, {});
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(config.status().message()),
              HasSubstr("clusters[name=c].cluster.certificate-authority-data"));
}

TEST(ParseKubeconfigTest, RefusesInsecureSkipVerifyTogetherWithACa) {
  const std::string yaml = R"(
clusters: [{name: c, cluster: {server: "https://h:1", certificate-authority: /ca, insecure-skip-tls-verify: true}}]
contexts: [{name: x, context: {cluster: c}}]
current-context: x
)";
  auto config = ParseKubeconfig(yaml, {});
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(config.status().message()), HasSubstr("insecure-skip-tls-verify"));
}

TEST(ParseKubeconfigTest, NeverSkipsVerificationUnlessTheFileSaysSo) {
  const std::string yaml = R"(
clusters: [{name: c, cluster: {server: "https://h:1"}}]
contexts: [{name: x, context: {cluster: c}}]
current-context: x
)";
  auto config = ParseKubeconfig(yaml, {});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_FALSE(config->tls.insecure_skip_verify);
}

TEST(ParseKubeconfigTest, ReportsExecPluginsAsUnimplemented) {
  const std::string yaml = R"(
clusters: [{name: c, cluster: {server: "https://h:1"}}]
users: [{name: u, user: {exec: {command: aws, apiVersion: client.authentication.k8s.io/v1}}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
)";
  auto config = ParseKubeconfig(yaml, {});
  EXPECT_EQ(config.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(config.status().message()), HasSubstr("users[name=u].user.exec"));
}

TEST(ParseKubeconfigTest, RejectsMalformedYamlAndMissingServer) {
  EXPECT_EQ(ParseKubeconfig("clusters: [", {}).status().code(), absl::StatusCode::kInvalidArgument);
  const std::string no_server = R"(
clusters: [{name: c, cluster: {}}]
contexts: [{name: x, context: {cluster: c}}]
current-context: x
)";
  auto config = ParseKubeconfig(no_server, {});
  EXPECT_THAT(std::string(config.status().message()), HasSubstr("clusters[name=c].cluster.server"));
  EXPECT_EQ(ParseKubeconfig("", {}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ParseKubeconfigTest, RequiresCertificateAndKeyTogether) {
  const std::string yaml = R"(
clusters: [{name: c, cluster: {server: "https://h:1"}}]
users: [{name: u, user: {client-certificate: /a.crt}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
)";
  auto config = ParseKubeconfig(yaml, {});
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(config.status().message()), HasSubstr("without client-key"));
}

TEST(LoadKubeconfigFilesTest, MergesFilesFirstDefinitionWinsAndPathsFollowTheirFile) {
  TempDir dir;
  const std::string first = dir.Write("a/config", R"(
clusters: [{name: c, cluster: {server: "https://first:1", certificate-authority: ca.crt}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
)");
  const std::string second = dir.Write("b/config", R"(
clusters: [{name: c, cluster: {server: "https://second:2"}}]
users: [{name: u, user: {tokenFile: token}}]
current-context: x
)");
  auto config = LoadKubeconfigFiles({first, second});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server, "https://first:1");
  EXPECT_EQ(config->tls.ca_file, dir.Path() + "/a/ca.crt");
  EXPECT_EQ(config->bearer_token_file, dir.Path() + "/b/token");
}

TEST(LoadKubeconfigFilesTest, NamesAMissingFile) {
  auto config = LoadKubeconfigFiles({"/nonexistent/kubeconfig"});
  EXPECT_FALSE(config.ok());
  EXPECT_THAT(std::string(config.status().message()), HasSubstr("/nonexistent/kubeconfig"));
}

TEST(LoadInClusterConfigTest, BuildsTheServiceUrlAndReadsTheNamespace) {
  TempDir dir;
  InClusterPaths paths;
  paths.token_file = dir.Write("token", "tok\n");
  paths.ca_file = dir.Write("ca.crt", kCaPem);
  paths.namespace_file = dir.Write("namespace", "open-cluster-management\n");
  auto config = LoadInClusterConfig(paths, "10.0.0.1", "443");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server, "https://10.0.0.1:443");
  EXPECT_EQ(config->bearer_token_file, paths.token_file);
  EXPECT_EQ(config->tls.ca_file, paths.ca_file);
  EXPECT_EQ(config->namespace_name, "open-cluster-management");

  auto v6 = LoadInClusterConfig(paths, "fd00::1", "6443");
  ASSERT_TRUE(v6.ok()) << v6.status();
  EXPECT_EQ(v6->server, "https://[fd00::1]:6443");
}

TEST(LoadInClusterConfigTest, FailsOutsideAPodOrWithoutAToken) {
  TempDir dir;
  InClusterPaths paths;
  paths.token_file = dir.Path() + "/missing-token";
  paths.ca_file = dir.Write("ca.crt", kCaPem);
  EXPECT_EQ(LoadInClusterConfig(paths, "", "443").status().code(),
            absl::StatusCode::kFailedPrecondition);
  auto no_token = LoadInClusterConfig(paths, "10.0.0.1", "443");
  EXPECT_EQ(no_token.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(no_token.status().message()), HasSubstr("missing-token"));
}

}  // namespace
}  // namespace mmi::kube
