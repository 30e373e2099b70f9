#include "libs/argocd_repo/repo_credentials.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "libs/argocd_repo/internal/repo_server_protos.h"
#include "libs/argocd_repo/request_builder.h"

namespace mmi::argocd_repo {

void PrintTo(const SkippedSecret& skipped, std::ostream* os) {
  *os << "{" << skipped.name << ", " << skipped.type << ", " << skipped.url << ", " << skipped.error
      << "}";
}

namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

// A Secret as the API returns it: `data` values base64-encoded.
json Secret(const std::string& name, std::string_view type,
            const std::map<std::string, std::string>& data) {
  json encoded = json::object();
  for (const auto& [key, value] : data) {
    encoded[key] = absl::Base64Escape(value);
  }
  json labels = json::object();
  if (!type.empty()) {
    labels[std::string(kSecretTypeLabel)] = type;
  }
  return json{{"apiVersion", "v1"},
              {"kind", "Secret"},
              {"metadata", {{"name", name}, {"namespace", "argocd"}, {"labels", labels}}},
              {"type", "Opaque"},
              {"data", encoded}};
}

TEST(NormalizeGitUrlTest, FollowsArgoCdsNormalisation) {
  struct Case {
    std::string in;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"https://GitHub.com/Org/Repo.git", "https://github.com/org/repo"},
      {"  https://github.com/org/repo\n", "https://github.com/org/repo"},
      {"https://github.com/org/repo/", "https://github.com/org/repo/"},  // a "/" stays
      {"https://github.com/org/repo.git/", "https://github.com/org/repo.git/"},
      {"https://github.com/org/repo.git.git", "https://github.com/org/repo.git"},  // one suffix
      {"git@github.com:org/repo.git", "git@github.com/org/repo"},
      {"ssh://git@github.com/org/repo.git", "git@github.com/org/repo"},
      {"ssh://git@github.com:2222/org/repo", "git@github.com:2222/org/repo"},
      {"https://user@github.com/org/repo", "https://user@github.com/org/repo"},
      {"oci://ghcr.io/org/charts", "oci://ghcr.io/org/charts"},
      {"https://[::1]:8443/repo", "https://[::1]:8443/repo"},
      {"https://github.com:abc/org/repo", ""},  // Go: invalid port
      {"https://github.com/org/%zz", ""},       // Go: invalid URL escape
      {"https://github.com/org/\x01", ""},      // Go: invalid control character
      {":github.com/org/repo", ""},             // Go: missing protocol scheme
  };
  for (const Case& c : cases) {
    EXPECT_EQ(NormalizeGitUrl(c.in), c.want) << c.in;
  }
}

TEST(SameGitUrlTest, ComparesNormalisedUrls) {
  struct Case {
    std::string left;
    std::string right;
    bool want;
  };
  const std::vector<Case> cases = {
      {"https://github.com/org/repo", "HTTPS://GITHUB.COM/org/repo.git", true},
      {"git@github.com:org/repo.git", "ssh://git@github.com/org/repo", true},
      {"https://github.com/org/repo", "https://github.com/org/repo/", false},
      {"https://github.com/org/repo", "https://gitlab.com/org/repo", false},
      {"https://github.com/org/repo", "git@github.com:org/repo", false},
      {"", "", false},
      // Neither normalises: compared as written, so only the identical string matches.
      {"https://h:x/r", "https://h:x/r", true},
      {"https://h:x/r", "HTTPS://h:x/r", false},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(SameGitUrl(c.left, c.right), c.want) << c.left << " vs " << c.right;
  }
}

struct LookupCase {
  std::string name;
  std::vector<json> secrets;
  std::string repo_url;
  std::string project = "default";
  json want;
  std::string want_repository_secret{};
  std::string want_creds_secret{};
};

TEST(RepositoryCredentialsTest, LooksUpAsArgoCdDoes) {
  const json org_template =
      Secret("creds-org", kSecretTypeRepoCreds,
             {{"url", "https://github.com/org"}, {"username", "org-bot"}, {"password", "p-org"}});
  const json host_template =
      Secret("creds-host", kSecretTypeRepoCreds,
             {{"url", "https://github.com"}, {"username", "host-bot"}, {"password", "p-host"}});
  const std::vector<LookupCase> cases = {
      {.name = "an exact repository Secret beats a template",
       .secrets = {org_template, Secret("repo-private", kSecretTypeRepository,
                                        {{"url", "https://github.com/org/private.git"},
                                         {"username", "alice"},
                                         {"password", "p-alice"},
                                         {"insecure", "true"}})},
       .repo_url = "https://github.com/org/private",
       .want = {{"repo", "https://github.com/org/private.git"},
                {"username", "alice"},
                {"password", "p-alice"},
                {"insecure", true}},
       .want_repository_secret = "repo-private"},
      {.name = "the longest template prefix wins, whatever the order",
       .secrets = {host_template, org_template},
       .repo_url = "https://github.com/org/app",
       .want = {{"repo", "https://github.com/org/app"},
                {"username", "org-bot"},
                {"password", "p-org"},
                {"inheritedCreds", true}},
       .want_creds_secret = "creds-org"},
      {.name = "a template is a plain string prefix, as in Argo CD",
       .secrets = {org_template},
       .repo_url = "https://github.com/organisation/app",
       .want = {{"repo", "https://github.com/organisation/app"},
                {"username", "org-bot"},
                {"password", "p-org"},
                {"inheritedCreds", true}},
       .want_creds_secret = "creds-org"},
      {.name = "a template matches the normalised URL",
       .secrets = {Secret("creds-org-upper", kSecretTypeRepoCreds,
                          {{"url", "HTTPS://GitHub.com/Org/"}, {"bearerToken", "t"}})},
       .repo_url = "https://github.com/org/app.git",
       .want = {{"repo", "https://github.com/org/app.git"},
                {"bearerToken", "t"},
                {"inheritedCreds", true}},
       .want_creds_secret = "creds-org-upper"},
      {.name = "a repository Secret without credentials inherits them from a template",
       .secrets = {Secret("creds-org-full", kSecretTypeRepoCreds,
                          {{"url", "https://github.com/org"},
                           {"githubAppPrivateKey", "KEY"},
                           {"githubAppID", "123"},
                           {"githubAppInstallationID", "+456"},
                           {"githubAppEnterpriseBaseUrl", "https://ghe.example.com/api/v3"},
                           {"proxy", "http://proxy:3128"},
                           {"type", "git"},
                           {"forceHttpBasicAuth", "True"},
                           {"enableOCI", "1"}}),
                   Secret("repo-app", kSecretTypeRepository,
                          {{"url", "https://github.com/org/app"},
                           {"name", "app"},
                           {"project", "default"},
                           {"proxy", "http://own-proxy:3128"},
                           {"enableLfs", "t"},
                           {"insecureIgnoreHostKey", "false"}})},
       .repo_url = "https://github.com/org/app",
       .want = {{"repo", "https://github.com/org/app"},
                {"name", "app"},
                {"project", "default"},
                {"proxy", "http://own-proxy:3128"},  // its own: filled only when empty
                {"enableLfs", true},
                {"githubAppPrivateKey", "KEY"},
                {"githubAppID", 123},
                {"githubAppInstallationID", 456},
                {"githubAppEnterpriseBaseUrl", "https://ghe.example.com/api/v3"},
                {"type", "git"},
                {"forceHttpBasicAuth", true},
                {"enableOCI", true},
                {"inheritedCreds", true}},
       .want_repository_secret = "repo-app",
       .want_creds_secret = "creds-org-full"},
      {.name = "the template's flags replace the repository's own",
       .secrets = {org_template,
                   Secret("repo-oci", kSecretTypeRepository,
                          {{"url", "https://github.com/org/app"}, {"enableOCI", "true"}})},
       .repo_url = "https://github.com/org/app",
       .want = {{"repo", "https://github.com/org/app"},
                {"username", "org-bot"},
                {"password", "p-org"},
                {"inheritedCreds", true}},
       .want_repository_secret = "repo-oci",
       .want_creds_secret = "creds-org"},
      {.name = "ssh: an scp-style template lends to an ssh:// URL",
       .secrets = {Secret("creds-ssh", kSecretTypeRepoCreds,
                          {{"url", "git@github.com:org"}, {"sshPrivateKey", "-----BEGIN"}})},
       .repo_url = "ssh://git@github.com/org/app.git",
       .want = {{"repo", "ssh://git@github.com/org/app.git"},
                {"sshPrivateKey", "-----BEGIN"},
                {"inheritedCreds", true}},
       .want_creds_secret = "creds-ssh"},
      {.name = "ssh: an ssh:// repository Secret matches an scp-style URL",
       .secrets = {Secret("repo-ssh", kSecretTypeRepository,
                          {{"url", "ssh://git@github.com/org/app"},
                           {"sshPrivateKey", "-----BEGIN"},
                           {"insecureIgnoreHostKey", "true"}})},
       .repo_url = "git@github.com:org/app.git",
       .want = {{"repo", "ssh://git@github.com/org/app"},
                {"sshPrivateKey", "-----BEGIN"},
                {"insecureIgnoreHostKey", true}},
       .want_repository_secret = "repo-ssh"},
      {.name = "helm: a Helm repository with basic auth",
       .secrets = {host_template, Secret("repo-charts", kSecretTypeRepository,
                                         {{"url", "https://charts.example.com"},
                                          {"type", "helm"},
                                          {"name", "charts"},
                                          {"username", "u"},
                                          {"password", "p"},
                                          {"tlsClientCertData", "CERT"},
                                          {"tlsClientCertKey", "CKEY"}})},
       .repo_url = "https://charts.example.com",
       .want = {{"repo", "https://charts.example.com"},
                {"type", "helm"},
                {"name", "charts"},
                {"username", "u"},
                {"password", "p"},
                {"tlsClientCertData", "CERT"},
                {"tlsClientCertKey", "CKEY"}},
       .want_repository_secret = "repo-charts"},
      {.name = "the Secret of the Application's project beats a project-less one",
       .secrets = {Secret("repo-any", kSecretTypeRepository,
                          {{"url", "https://github.com/org/app"}, {"username", "any"}}),
                   Secret("repo-team-a", kSecretTypeRepository,
                          {{"url", "https://github.com/org/app"},
                           {"username", "team-a"},
                           {"project", "team-a"}})},
       .repo_url = "https://github.com/org/app",
       .project = "team-a",
       .want = {{"repo", "https://github.com/org/app"},
                {"username", "team-a"},
                {"project", "team-a"}},
       .want_repository_secret = "repo-team-a"},
      {.name = "another project's Secret is not used",
       .secrets = {Secret(
           "repo-team-a",
           kSecretTypeRepository,
           {{"url", "https://github.com/org/app"}, {"username", "team-a"}, {"project", "team-a"}})},
       .repo_url = "https://github.com/org/app",
       .project = "team-b",
       .want = PublicRepository("https://github.com/org/app")},
      {.name = "a trailing slash is another URL",
       .secrets = {Secret("repo-app", kSecretTypeRepository,
                          {{"url", "https://github.com/org/app/"}, {"username", "u"}})},
       .repo_url = "https://github.com/org/app",
       .want = PublicRepository("https://github.com/org/app")},
      {.name = "no match: the public repository",
       .secrets = {org_template,
                   Secret("cluster-x", "cluster", {{"server", "https://x"}, {"name", "x"}}),
                   Secret("no-label", "", {{"url", "https://gitlab.com/org/app"}})},
       .repo_url = "https://gitlab.com/org/app",
       .want = PublicRepository("https://gitlab.com/org/app")},
  };
  for (const LookupCase& c : cases) {
    const RepositoryCredentials credentials(c.secrets);
    EXPECT_THAT(credentials.skipped(), IsEmpty()) << c.name;
    const RepositoryMatch match = credentials.Lookup(c.repo_url, c.project);
    EXPECT_EQ(match.repository, c.want) << c.name << ": " << match.repository.dump();
    EXPECT_EQ(match.repository_secret, c.want_repository_secret) << c.name;
    EXPECT_EQ(match.creds_secret, c.want_creds_secret) << c.name;
    EXPECT_THAT(match.skipped, IsEmpty()) << c.name;
  }
}

TEST(RepositoryCredentialsTest, SkipsABadSecretWithItsReasonAndUsesTheOthers) {
  json not_a_string = Secret("repo-number", kSecretTypeRepository, {});
  not_a_string["data"]["url"] = 42;
  json bad_base64 = Secret("repo-base64", kSecretTypeRepository, {{"url", "https://x/b64"}});
  bad_base64["data"]["password"] = "not base64!";
  json no_data = Secret("creds-empty", kSecretTypeRepoCreds, {});
  no_data.erase("data");
  const std::vector<json> secrets = {
      Secret("repo-bad-app-id", kSecretTypeRepository,
             {{"url", "https://github.com/org/app"},
              {"githubAppID", "abc"},
              {"githubAppPrivateKey", "KEY"}}),
      Secret(
          "creds-bad-bool", kSecretTypeRepoCreds,
          {{"url", "https://github.com/org"}, {"username", "u"}, {"insecureOCIForceHttp", "yes"}}),
      Secret("repo-no-url", kSecretTypeRepository, {{"username", "u"}}),
      Secret("repo-empty-flag", kSecretTypeRepository,
             {{"url", "https://x/flag"}, {"insecure", ""}}),
      Secret("repo-binary", kSecretTypeRepository,
             {{"url", "https://x/bin"}, {"password", std::string("\xff\xfe", 2)}}),
      not_a_string,
      bad_base64,
      no_data,
      Secret("repo-good", kSecretTypeRepository,
             {{"url", "https://github.com/org/good"}, {"username", "good"}}),
  };
  const RepositoryCredentials credentials(secrets);

  auto invalid = [](const std::string& message) { return absl::InvalidArgumentError(message); };
  EXPECT_THAT(
      credentials.skipped(),
      ElementsAre(
          SkippedSecret{"repo-bad-app-id", "repository", "https://github.com/org/app",
                        invalid("Secret \"repo-bad-app-id\": data.githubAppID: not a base-10 "
                                "64-bit integer")},
          SkippedSecret{"creds-bad-bool", "repo-creds", "https://github.com/org",
                        invalid("Secret \"creds-bad-bool\": data.insecureOCIForceHttp: not a "
                                "boolean (true, false, 1, 0, t, f)")},
          SkippedSecret{"repo-no-url", "repository", "",
                        invalid("Secret \"repo-no-url\": data.url: missing or empty")},
          SkippedSecret{"repo-empty-flag", "repository", "https://x/flag",
                        invalid("Secret \"repo-empty-flag\": data.insecure: not a boolean "
                                "(true, false, 1, 0, t, f)")},
          SkippedSecret{"repo-binary", "repository", "https://x/bin",
                        invalid("Secret \"repo-binary\": data.password: not UTF-8 text")},
          SkippedSecret{"repo-number", "repository", "",
                        invalid("Secret \"repo-number\": data.url: want a base64 string, got "
                                "number")},
          SkippedSecret{"repo-base64", "repository", "https://x/b64",
                        invalid("Secret \"repo-base64\": data.password: not valid base64")},
          SkippedSecret{"creds-empty", "repo-creds", "",
                        invalid("Secret \"creds-empty\": data: want an object, got null")}));

  // The good Secret still serves its repository, and no bad one is named for it.
  RepositoryMatch good = credentials.Lookup("https://github.com/org/good", "default");
  EXPECT_EQ(good.repository, (json{{"repo", "https://github.com/org/good"}, {"username", "good"}}));
  EXPECT_THAT(good.skipped, IsEmpty());

  // The URL the bad Secrets meant: rendered as public, with both bad candidates named so the
  // caller can report them instead.
  RepositoryMatch app = credentials.Lookup("https://github.com/org/app.git", "default");
  EXPECT_EQ(app.repository, PublicRepository("https://github.com/org/app.git"));
  EXPECT_EQ(app.repository_secret, "");
  EXPECT_EQ(app.creds_secret, "");
  ASSERT_EQ(app.skipped.size(), 2U);
  EXPECT_EQ(app.skipped[0].name, "repo-bad-app-id");
  EXPECT_EQ(app.skipped[1].name, "creds-bad-bool");
}

TEST(RepositoryCredentialsTest, TheFirstOfEqualCandidatesWins) {
  const RepositoryCredentials credentials({
      Secret("creds-a", kSecretTypeRepoCreds,
             {{"url", "https://github.com/org"}, {"username", "a"}}),
      Secret("creds-b", kSecretTypeRepoCreds,
             {{"url", "https://github.com/org"}, {"username", "b"}}),
      Secret("repo-a", kSecretTypeRepository,
             {{"url", "https://github.com/org/x"}, {"username", "a"}}),
      Secret("repo-b", kSecretTypeRepository,
             {{"url", "https://github.com/org/x"}, {"username", "b"}}),
  });
  EXPECT_EQ(credentials.Lookup("https://github.com/org/y", "default").creds_secret, "creds-a");
  EXPECT_EQ(credentials.Lookup("https://github.com/org/x", "default").repository_secret, "repo-a");
}

// Every field Lookup can write is a field of the pinned v1alpha1.Repository message with the right
// JSON type: the repo-server request parser refuses unknown fields.
TEST(RepositoryCredentialsTest, TheRepositoryParsesAsArgoCdsRepositoryMessage) {
  const RepositoryCredentials credentials({
      Secret("creds-all", kSecretTypeRepoCreds,
             {{"url", "https://github.com/org"},
              {"username", "u"},
              {"password", "p"},
              {"bearerToken", "t"},
              {"sshPrivateKey", "k"},
              {"tlsClientCertData", "c"},
              {"tlsClientCertKey", "ck"},
              {"type", "git"},
              {"githubAppPrivateKey", "g"},
              {"githubAppID", "1"},
              {"githubAppInstallationID", "2"},
              {"githubAppEnterpriseBaseUrl", "https://ghe"},
              {"gcpServiceAccountKey", "{}"},
              {"proxy", "http://p"},
              {"noProxy", "localhost"},
              {"enableOCI", "true"},
              {"insecureOCIForceHttp", "true"},
              {"forceHttpBasicAuth", "true"},
              {"useAzureWorkloadIdentity", "true"}}),
      Secret("repo-all", kSecretTypeRepository,
             {{"url", "https://github.com/org/app"},
              {"name", "app"},
              {"project", "default"},
              {"insecure", "true"},
              {"insecureIgnoreHostKey", "true"},
              {"enableLfs", "true"}}),
  });
  const RepositoryMatch match = credentials.Lookup("https://github.com/org/app", "default");
  ASSERT_EQ(match.creds_secret, "creds-all");
  // Every field of the message but connectionState, which Argo CD fills only for its UI.
  EXPECT_EQ(match.repository.size(), 25U) << match.repository.dump();
  EXPECT_FALSE(match.repository.contains("connectionState"));
  auto message = internal::RepoServerProtos::Get().FromJson(
      "github.com.argoproj.argo_cd.v3.pkg.apis.application.v1alpha1.Repository", match.repository);
  ASSERT_TRUE(message.ok()) << message.status();
  EXPECT_EQ((*message)->GetDescriptor()->field_count(), 26);
}

}  // namespace
}  // namespace mmi::argocd_repo
