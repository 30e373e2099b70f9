// GrpcRepoServerClient (libs/argocd_repo) against the real argocd-repo-server v3.2.11 (the Argo CD
// peer, tests/peers/bin/start-argocd) reading a git repository served on loopback
// (tests/peers/bin/start-git) holding examples/apps/guestbook-lite:
//   - the plain YAML, Helm and Kustomize variants render, each with the commit's sha and its
//     source type, from requests built as Argo CD's application-controller builds them;
//   - the cmp/ variant renders through the repo-server's argocd-cmp-server sidecar (the
//     `mmi-template` plugin of examples/manifest-delivery/cmp-plugin, which start-argocd runs
//     for ROLE=hub), with the Application's plugin env; a template missing a value, or a plugin
//     no sidecar serves, is a render error;
//   - ResolveRevision of HEAD and of the branch gives the commit sha;
//   - a commit with broken YAML gives kFailedPrecondition with the repo-server's error, while the
//     previous commit still renders;
//   - the client survives the repo-server being killed and started again on the same port;
//   - TLS: verified against a CA, or unverified against the repo-server's self-signed certificate;
//   - an unreachable address is kUnavailable and a silent one kDeadlineExceeded.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "libs/argocd_repo/grpc/grpc_repo_server_client.h"
#include "libs/argocd_repo/request_builder.h"
#include "libs/transport/testing/metric_value.h"
#include "tests/support/peer.h"
#include "tests/support/wait.h"

namespace mmi::argocd_repo {
namespace {

using nlohmann::json;
using std::chrono::seconds;
using ::testing::HasSubstr;
using testing::PeerProcess;
using testing::RunCommand;

std::string RepoRoot() { return testing::PeersBinDir() + "/../../.."; }
std::string Guestbook() { return RepoRoot() + "/examples/apps/guestbook-lite"; }

std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  }
  return out + "'";
}

// The first line of a command's output (a sha), failing the test on a non-zero exit.
std::string RunOrFail(const std::string& command) {
  const testing::CommandResult result = RunCommand(command);
  EXPECT_EQ(result.exit_code, 0) << command << "\n" << result.output;
  return result.output.substr(0, result.output.find('\n'));
}

json Application(const std::string& name, json source) {
  return json{{"apiVersion", "argoproj.io/v1alpha1"},
              {"kind", "Application"},
              {"metadata", {{"name", name}, {"namespace", "openshift-gitops"}}},
              {"spec",
               {{"project", "default"},
                {"source", std::move(source)},
                {"destination",
                 {{"server", "https://kubernetes.default.svc"}, {"namespace", "guestbook"}}}}}};
}

// "Kind/name" of each rendered manifest.
std::set<std::string> Objects(const RenderedManifests& rendered) {
  std::set<std::string> out;
  for (const std::string& manifest : rendered.manifests) {
    const json object = json::parse(manifest);
    out.insert(object.value("kind", "") + "/" + object["metadata"].value("name", ""));
  }
  return out;
}

class ArgoCdRepoServerTest : public ::testing::Test {
 protected:
  // One hub, git server and Argo CD for the suite: starting them is most of its time.
  static void SetUpTestSuite() {
    auto start = [](const std::string& name, const std::vector<std::string>& args,
                    std::unique_ptr<PeerProcess>& out) {
      absl::StatusOr<std::unique_ptr<PeerProcess>> peer = PeerProcess::Start(name, args);
      if (!peer.ok()) {
        start_error_ = new std::string(std::string(peer.status().message()));
        return false;
      }
      out = *std::move(peer);
      return true;
    };
    kube_ = new std::unique_ptr<PeerProcess>;
    git_ = new std::unique_ptr<PeerProcess>;
    argocd_ = new std::unique_ptr<PeerProcess>;
    if (!start("kube", {"ROLE=hub"}, *kube_) ||
        !start("git", {"REPO=guestbook-lite:" + Guestbook(), "REPO=gl-broken:" + Guestbook()},
               *git_) ||
        !start("argocd",
               {"ROLE=hub", "KUBECONFIG=" + (*kube_)->Get("KUBECONFIG"),
                "KUBECTL=" + (*kube_)->Get("KUBECTL")},
               *argocd_)) {
      return;
    }
  }
  static void TearDownTestSuite() {
    delete argocd_;  // stops the peers, in reverse order of their start
    delete git_;
    delete kube_;
    argocd_ = git_ = kube_ = nullptr;
  }

  void SetUp() override {
    ASSERT_EQ(start_error_, nullptr) << "a peer did not start: " << *start_error_;
  }

  static std::string Repo(const std::string& name) {
    return (*git_)->Get("GIT_URL") + "/" + name + ".git";
  }
  static std::string Head(const std::string& name) {
    return RunOrFail("git --git-dir " + Quote((*git_)->Get("GIT_REPOS_DIR") + "/" + name + ".git") +
                     " rev-parse refs/heads/main");
  }
  static std::string Commit(const std::string& name, const std::string& dir) {
    return RunOrFail(Quote(testing::PeersBinDir() + "/commit-dir") + " " +
                     Quote((*git_)->data_dir()) + " " + name + " " + Quote(dir));
  }
  static void RestartRepoServer(const std::string& tls, const std::string& more = "") {
    RunOrFail(Quote(testing::PeersBinDir() + "/restart-argocd-repo-server") + " " +
              Quote((*argocd_)->data_dir()) + " TLS=" + tls + more);
  }

  static std::unique_ptr<GrpcRepoServerClient> Client(GrpcRepoServerSettings settings = {}) {
    if (settings.address.empty()) {
      settings.address = (*argocd_)->Get("REPO_SERVER_ADDR");
      settings.tls.enabled = false;
    }
    settings.reconnect_backoff_max = std::chrono::seconds(2);
    absl::StatusOr<std::unique_ptr<GrpcRepoServerClient>> client =
        GrpcRepoServerClient::Create(settings, *metrics_);
    EXPECT_TRUE(client.ok()) << client.status();
    return client.ok() ? *std::move(client) : nullptr;
  }

  static absl::StatusOr<RenderedManifests> Render(RepoServerClient& client, const json& app,
                                                  const std::string& revision = "") {
    absl::StatusOr<ManifestRequest> request = BuildManifestRequest(app, revision, {});
    if (!request.ok()) {
      return request.status();
    }
    return client.GenerateManifest(*request);
  }

  static json PlainApp(const std::string& repo = "guestbook-lite") {
    return Application("gl-plain",
                       {{"repoURL", Repo(repo)}, {"path", "plain"}, {"targetRevision", "main"}});
  }

  static std::string* start_error_;
  static prometheus::Registry* registry_;
  static RepoServerMetrics* metrics_;
  static std::unique_ptr<PeerProcess>* kube_;
  static std::unique_ptr<PeerProcess>* git_;
  static std::unique_ptr<PeerProcess>* argocd_;
};

std::string* ArgoCdRepoServerTest::start_error_ = nullptr;
prometheus::Registry* ArgoCdRepoServerTest::registry_ = new prometheus::Registry;
RepoServerMetrics* ArgoCdRepoServerTest::metrics_ = new RepoServerMetrics(*registry_);
std::unique_ptr<PeerProcess>* ArgoCdRepoServerTest::kube_ = nullptr;
std::unique_ptr<PeerProcess>* ArgoCdRepoServerTest::git_ = nullptr;
std::unique_ptr<PeerProcess>* ArgoCdRepoServerTest::argocd_ = nullptr;

TEST_F(ArgoCdRepoServerTest, RendersThePlainHelmAndKustomizeVariants) {
  auto client = Client();
  ASSERT_NE(client, nullptr);
  const std::string sha = Head("guestbook-lite");

  absl::StatusOr<RenderedManifests> plain = Render(*client, PlainApp());
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->revision, sha);
  EXPECT_EQ(plain->source_type, "Directory");
  EXPECT_EQ(Objects(*plain),
            (std::set<std::string>{"Namespace/guestbook-lite", "ConfigMap/guestbook-lite",
                                   "Deployment/guestbook-lite", "Service/guestbook-lite"}));
  // Argo CD's default tracking: the annotation naming the app, as the controller's render has.
  const json deployment = json::parse(plain->manifests[0]);
  EXPECT_THAT(deployment["metadata"]["annotations"].value("argocd.argoproj.io/tracking-id", ""),
              HasSubstr("gl-plain:"));

  // valuesObject reaches Helm (a RawExtension on the wire): workload false drops the Deployment.
  absl::StatusOr<RenderedManifests> helm = Render(
      *client, Application("gl-helm", {{"repoURL", Repo("guestbook-lite")},
                                       {"path", "helm"},
                                       {"targetRevision", "main"},
                                       {"helm", {{"valuesObject", {{"workload", false}}}}}}));
  ASSERT_TRUE(helm.ok()) << helm.status();
  EXPECT_EQ(helm->revision, sha);
  EXPECT_EQ(helm->source_type, "Helm");
  EXPECT_EQ(Objects(*helm), (std::set<std::string>{"Namespace/guestbook-lite-helm",
                                                   "ConfigMap/gl-helm", "Service/gl-helm"}));

  absl::StatusOr<RenderedManifests> kustomize =
      Render(*client, Application("gl-kustomize", {{"repoURL", Repo("guestbook-lite")},
                                                   {"path", "kustomize"},
                                                   {"targetRevision", "main"},
                                                   {"kustomize", {{"nameSuffix", "-x"}}}}));
  ASSERT_TRUE(kustomize.ok()) << kustomize.status();
  EXPECT_EQ(kustomize->revision, sha);
  EXPECT_EQ(kustomize->source_type, "Kustomize");
  EXPECT_TRUE(Objects(*kustomize).count("Deployment/kz-guestbook-lite-x") == 1)
      << ::testing::PrintToString(Objects(*kustomize));
}

TEST_F(ArgoCdRepoServerTest, RendersThroughTheConfigManagementPluginSidecar) {
  ASSERT_FALSE((*argocd_)->Get("CMP_PLUGIN_SOCKET").empty()) << "start-argocd ran no CMP sidecar";
  auto client = Client();
  ASSERT_NE(client, nullptr);
  const std::string sha = Head("guestbook-lite");
  const auto cmp_app = [&](json plugin) {
    return Application("gl-cmp", {{"repoURL", Repo("guestbook-lite")},
                                  {"path", "cmp"},
                                  {"targetRevision", "main"},
                                  {"plugin", std::move(plugin)}});
  };

  absl::StatusOr<RenderedManifests> rendered = Render(
      *client,
      cmp_app({{"name", "mmi-template"},
               {"env", json::array({{{"name", "MESSAGE"}, {"value", "Hi & a|b/c from a CMP"}}})}}));
  ASSERT_TRUE(rendered.ok()) << rendered.status();
  EXPECT_EQ(rendered->revision, sha);
  EXPECT_EQ(rendered->source_type, "Plugin");
  EXPECT_EQ(Objects(*rendered),
            (std::set<std::string>{"Namespace/guestbook-lite-cmp", "ConfigMap/guestbook-lite",
                                   "Deployment/guestbook-lite", "Service/guestbook-lite"}));
  std::string message;
  for (const std::string& manifest : rendered->manifests) {
    const json object = json::parse(manifest);
    if (object.value("kind", "") == "ConfigMap") {
      message = object["data"].value("message", "");
    }
  }
  // The env value verbatim, sed's special characters included (the repo-server itself expands
  // `$NAME` in plugin env values from the build environment, so none is used here).
  EXPECT_EQ(message, "Hi & a|b/c from a CMP");

  // The plugin's own error reaches the caller as a render error.
  absl::StatusOr<RenderedManifests> missing = Render(*client, cmp_app({{"name", "mmi-template"}}));
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kFailedPrecondition) << missing.status();
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("${MESSAGE} has no value"));

  // A plugin no sidecar serves.
  absl::StatusOr<RenderedManifests> unknown =
      Render(*client, cmp_app({{"name", "no-such-plugin"},
                               {"env", json::array({{{"name", "MESSAGE"}, {"value", "x"}}})}}));
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kFailedPrecondition) << unknown.status();
  EXPECT_THAT(std::string(unknown.status().message()), HasSubstr("no-such-plugin"));
}

TEST_F(ArgoCdRepoServerTest, ResolveRevisionOfHeadAndOfTheBranchGivesTheCommitSha) {
  auto client = Client();
  ASSERT_NE(client, nullptr);
  const std::string sha = Head("guestbook-lite");
  ASSERT_EQ(sha.size(), 40U);
  for (const char* revision : {"HEAD", "main"}) {
    absl::StatusOr<ResolveRevisionRequest> request =
        BuildResolveRevisionRequest(PlainApp(), revision);
    ASSERT_TRUE(request.ok()) << request.status();
    absl::StatusOr<ResolvedRevision> resolved = client->ResolveRevision(*request);
    ASSERT_TRUE(resolved.ok()) << revision << ": " << resolved.status();
    EXPECT_EQ(resolved->revision, sha) << revision;
    EXPECT_THAT(resolved->ambiguous_revision, HasSubstr(sha));
  }
  absl::StatusOr<ResolveRevisionRequest> missing = BuildResolveRevisionRequest(PlainApp(), "nope");
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(client->ResolveRevision(*missing).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(ArgoCdRepoServerTest, ABrokenYamlCommitIsARenderErrorAndThePreviousCommitStillRenders) {
  auto client = Client();
  ASSERT_NE(client, nullptr);
  const std::string good = Head("gl-broken");
  const std::filesystem::path dir = std::filesystem::path((*git_)->data_dir()) / "broken-commit";
  std::filesystem::remove_all(dir);
  std::filesystem::copy(Guestbook(), dir, std::filesystem::copy_options::recursive);
  std::ofstream(dir / "plain" / "broken.yaml") << "apiVersion: v1\nkind: ConfigMap\n"
                                                  "metadata: {name: [unclosed\n";
  const std::string bad = Commit("gl-broken", dir.string());
  ASSERT_EQ(bad.size(), 40U);
  ASSERT_NE(bad, good);

  absl::StatusOr<RenderedManifests> broken = Render(*client, PlainApp("gl-broken"));
  EXPECT_EQ(broken.status().code(), absl::StatusCode::kFailedPrecondition) << broken.status();
  EXPECT_THAT(std::string(broken.status().message()), HasSubstr("broken.yaml"));
  EXPECT_GE(transport::testing::MetricValue(
                *registry_, "mmi_repo_server_requests_total",
                {{"operation", "generate_manifest"}, {"result", "render_error"}}),
            1);
  EXPECT_THAT(std::string(broken.status().message()),
              HasSubstr("GenerateManifest of " + Repo("gl-broken") + " path plain"));

  absl::StatusOr<RenderedManifests> previous = Render(*client, PlainApp("gl-broken"), good);
  ASSERT_TRUE(previous.ok()) << previous.status();
  EXPECT_EQ(previous->revision, good);
  EXPECT_EQ(previous->manifests.size(), 4U);
}

TEST_F(ArgoCdRepoServerTest, OneClientServesConcurrentCallers) {
  auto client = Client();
  ASSERT_NE(client, nullptr);
  const std::string sha = Head("guestbook-lite");
  const std::vector<json> apps = {PlainApp(),
                                  Application("gl-helm", {{"repoURL", Repo("guestbook-lite")},
                                                          {"path", "helm"},
                                                          {"targetRevision", "main"}}),
                                  Application("gl-kustomize", {{"repoURL", Repo("guestbook-lite")},
                                                               {"path", "kustomize"},
                                                               {"targetRevision", "main"}})};
  constexpr int kThreads = 6;
  constexpr int kCallsEach = 5;
  std::atomic<int> ok{0};
  std::vector<std::string> failures(kThreads);
  const auto started = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCallsEach; ++i) {
        absl::StatusOr<RenderedManifests> rendered = Render(*client, apps[(t + i) % apps.size()]);
        if (rendered.ok() && rendered->revision == sha && !rendered->manifests.empty()) {
          ++ok;
        } else {
          failures[t] = rendered.ok() ? "revision " + rendered->revision
                                      : std::string(rendered.status().message());
        }
      }
    });
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_EQ(ok.load(), kThreads * kCallsEach) << ::testing::PrintToString(failures);
  // Reported, not asserted (renders are cached by the repo-server after the first of each).
  std::cout << "[ measure  ] " << kThreads * kCallsEach << " GenerateManifest calls from "
            << kThreads << " threads in " << elapsed << " s\n";
}

TEST_F(ArgoCdRepoServerTest, UnreachableIsUnavailableAndSilentIsDeadlineExceeded) {
  // Nothing listens on a port we bound and closed.
  const int probe = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(probe, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(getsockname(probe, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::string closed = "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  close(probe);
  GrpcRepoServerSettings settings;
  settings.address = closed;
  settings.tls.enabled = false;
  auto unreachable = Client(settings);
  ASSERT_NE(unreachable, nullptr);
  EXPECT_EQ(Render(*unreachable, PlainApp()).status().code(), absl::StatusCode::kUnavailable);

  // A listener that accepts and never speaks HTTP/2.
  const int silent = socket(AF_INET, SOCK_STREAM, 0);
  addr.sin_port = 0;
  ASSERT_EQ(bind(silent, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(silent, 4), 0);
  len = sizeof(addr);
  ASSERT_EQ(getsockname(silent, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  settings.address = "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  settings.timeout = std::chrono::milliseconds(500);
  auto hung = Client(settings);
  ASSERT_NE(hung, nullptr);
  const auto started = std::chrono::steady_clock::now();
  absl::StatusOr<RenderedManifests> result = Render(*hung, PlainApp());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kDeadlineExceeded) << result.status();
  EXPECT_LT(std::chrono::steady_clock::now() - started, seconds(5));
  close(silent);
}

TEST_F(ArgoCdRepoServerTest, SurvivesTheRepoServerBeingKilledAndStartedAgain) {
  auto client = Client();
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(Render(*client, PlainApp()).ok());
  // SIGKILL, 3 s down, then the same command line on the same port.
  std::thread restart([] { RestartRepoServer("off", " DOWN_SECONDS=3"); });
  absl::Status down;
  EXPECT_TRUE(testing::WaitFor(
      [&] {
        down = Render(*client, PlainApp()).status();
        return !down.ok();
      },
      seconds(10), std::chrono::milliseconds(50)))
      << "the repo-server never went down";
  EXPECT_EQ(down.code(), absl::StatusCode::kUnavailable) << down;
  restart.join();
  absl::StatusOr<RenderedManifests> rendered;
  EXPECT_TRUE(testing::WaitFor(
      [&] {
        rendered = Render(*client, PlainApp());
        return rendered.ok() && rendered->manifests.size() == 4;
      },
      seconds(30), std::chrono::milliseconds(200)))
      << "no render after the restart: " << rendered.status();
}

TEST_F(ArgoCdRepoServerTest, SpeaksTlsVerifiedByACaOrUnverifiedAsArgoCdDoesByDefault) {
  RestartRepoServer("ca");
  // A copy: the next restart replaces the repo-server's TLS folder.
  const std::string ca_file = (*argocd_)->data_dir() + "/test-ca.crt";
  std::filesystem::copy_file((*argocd_)->data_dir() + "/repo-server-conf/reposerver/tls/ca.crt",
                             ca_file, std::filesystem::copy_options::overwrite_existing);
  GrpcRepoServerSettings settings;
  settings.address = (*argocd_)->Get("REPO_SERVER_ADDR");
  settings.tls.enabled = true;
  settings.tls.ca_file = ca_file;
  settings.tls.server_name = "localhost";
  auto verified = Client(settings);
  ASSERT_NE(verified, nullptr);
  absl::StatusOr<RenderedManifests> rendered;
  EXPECT_TRUE(testing::WaitFor(
      [&] {
        rendered = Render(*verified, PlainApp());
        return rendered.ok();
      },
      seconds(30), std::chrono::milliseconds(200)))
      << rendered.status();

  GrpcRepoServerSettings plaintext;
  plaintext.address = settings.address;
  plaintext.tls.enabled = false;
  auto plaintext_client = Client(plaintext);
  ASSERT_NE(plaintext_client, nullptr);
  EXPECT_EQ(Render(*plaintext_client, PlainApp()).status().code(), absl::StatusCode::kUnavailable);

  // The repo-server's own self-signed certificate: our CA does not trust it; skipping
  // verification (Argo CD's default without --repo-server-strict-tls) works.
  RestartRepoServer("self-signed");
  GrpcRepoServerSettings unverified = settings;
  unverified.tls.ca_file.clear();
  unverified.tls.insecure_skip_verify = true;
  auto insecure = Client(unverified);
  ASSERT_NE(insecure, nullptr);
  EXPECT_TRUE(testing::WaitFor(
      [&] {
        rendered = Render(*insecure, PlainApp());
        return rendered.ok();
      },
      seconds(30), std::chrono::milliseconds(200)))
      << rendered.status();
  auto strict = Client(settings);
  ASSERT_NE(strict, nullptr);
  absl::StatusOr<RenderedManifests> refused = Render(*strict, PlainApp());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable) << refused.status();

  GrpcRepoServerSettings missing_ca = settings;
  missing_ca.tls.ca_file = "/nonexistent/ca.crt";
  EXPECT_EQ(GrpcRepoServerClient::Create(missing_ca, *metrics_).status().code(),
            absl::StatusCode::kFailedPrecondition);
  RestartRepoServer("off");
}

}  // namespace
}  // namespace mmi::argocd_repo
