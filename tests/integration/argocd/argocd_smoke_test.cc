// Smoke test of the real Argo CD peer (tests/peers/bin/start-argocd, Argo CD v3.2.11 built from
// the Go module proxy) against real kube-apiservers and the local git server:
//   - a spoke's application-controller and repo-server sync each variant of
//     examples/apps/guestbook-lite (plain YAML, Helm, Kustomize) from git://127.0.0.1, and a new
//     commit becomes the Application's new sync revision;
//   - the hub's ApplicationSet controller generates one Application per element, with Argo CD's
//     resources finalizer, and deletes one when its element goes (it then waits on that finalizer:
//     in the pull model the dispatcher releases it once the spoke confirms).
// The API servers run no controllers, so a Deployment never becomes available there: the Helm
// variant runs without its workload (`workload: false`) to be Healthy; the others are checked for
// Synced and for their objects on the cluster.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/support/peer.h"
#include "tests/support/wait.h"

namespace mmi {
namespace {

using nlohmann::json;
using std::chrono::seconds;
using testing::RunCommand;

std::string RepoRoot() { return testing::PeersBinDir() + "/../../.."; }

std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  }
  return out + "'";
}

class ArgoCdSmokeTest : public ::testing::Test {
 protected:
  // kubectl against `kube`; returns its output, failing the test on a non-zero exit.
  static std::string Kubectl(const testing::PeerProcess& kube, const std::string& args,
                             const std::string& stdin_text = "") {
    std::string cmd =
        Quote(kube.Get("KUBECTL")) + " --kubeconfig " + Quote(kube.Get("KUBECONFIG")) + " " + args;
    if (!stdin_text.empty()) {
      cmd = "printf '%s' " + Quote(stdin_text) + " | " + cmd;
    }
    const auto result = RunCommand(cmd);
    EXPECT_EQ(result.exit_code, 0) << cmd << "\n" << result.output;
    return result.output;
  }

  // The Application as JSON, or null when it does not exist (yet).
  static json GetApp(const testing::PeerProcess& kube, const std::string& name) {
    const auto result =
        RunCommand(Quote(kube.Get("KUBECTL")) + " --kubeconfig " + Quote(kube.Get("KUBECONFIG")) +
                   " -n openshift-gitops get applications.argoproj.io " + Quote(name) +
                   " -o json 2>/dev/null");
    if (result.exit_code != 0) {
      return nullptr;
    }
    return json::parse(result.output, nullptr, false);
  }

  static std::string Field(const json& app, const json::json_pointer& p) {
    return app.is_object() && app.contains(p) && app.at(p).is_string()
               ? app.at(p).get<std::string>()
               : "";
  }
};

std::string ApplicationYaml(const std::string& name, const std::string& repo_url,
                            const std::string& path, const std::string& extra_source = "") {
  return "apiVersion: argoproj.io/v1alpha1\n"
         "kind: Application\n"
         "metadata: {name: " +
         name +
         ", namespace: openshift-gitops}\n"
         "spec:\n"
         "  project: default\n"
         "  source:\n"
         "    repoURL: " +
         repo_url +
         "\n"
         "    targetRevision: main\n"
         "    path: " +
         path + "\n" + extra_source +
         "  destination: {server: https://kubernetes.default.svc}\n"
         "  syncPolicy:\n"
         "    automated: {prune: true, selfHeal: true}\n";
}

TEST_F(ArgoCdSmokeTest, SpokeSyncsEveryVariantOfGuestbookLiteFromGit) {
  MMI_START_PEER(spoke, "kube", {"ROLE=managed"});
  MMI_START_PEER(git, "git",
                 {"REPO=guestbook-lite:" + RepoRoot() + "/examples/apps/guestbook-lite"});
  MMI_START_PEER(
      argocd, "argocd",
      {"ROLE=spoke", "KUBECONFIG=" + spoke->Get("KUBECONFIG"), "KUBECTL=" + spoke->Get("KUBECTL")});
  const std::string repo = git->Get("GIT_URL") + "/guestbook-lite.git";

  Kubectl(
      *spoke, "apply -f -",
      ApplicationYaml("gl-helm", repo, "helm", "    helm: {valuesObject: {workload: false}}\n") +
          "---\n" + ApplicationYaml("gl-plain", repo, "plain") + "---\n" +
          ApplicationYaml("gl-kustomize", repo, "kustomize"));

  const json::json_pointer sync("/status/sync/status");
  const json::json_pointer health("/status/health/status");
  const json::json_pointer revision("/status/sync/revision");
  json helm;
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        helm = GetApp(*spoke, "gl-helm");
        return Field(helm, sync) == "Synced" && Field(helm, health) == "Healthy";
      },
      seconds(120), std::chrono::milliseconds(500)))
      << "gl-helm never Synced+Healthy: " << helm.dump(2);
  for (const char* name : {"gl-plain", "gl-kustomize"}) {
    json app;
    EXPECT_TRUE(testing::WaitFor(
        [&] {
          app = GetApp(*spoke, name);
          return Field(app, sync) == "Synced";
        },
        seconds(120), std::chrono::milliseconds(500)))
        << name << " never Synced: " << app.dump(2);
  }
  // What each renderer made is on the cluster.
  EXPECT_NE(Kubectl(*spoke, "-n guestbook-lite-helm get configmap gl-helm -o name"), "");
  EXPECT_NE(Kubectl(*spoke, "-n guestbook-lite get deployment guestbook-lite -o name"), "");
  EXPECT_NE(Kubectl(*spoke, "-n guestbook-lite-kustomize get deployment kz-guestbook-lite -o name"),
            "");
  EXPECT_EQ(Field(helm, json::json_pointer("/status/sync/comparedTo/source/repoURL")), repo);

  // A new commit becomes the new sync revision (a refresh asks for it at once).
  const std::string first = Field(helm, revision);
  const auto commit = RunCommand(Quote(testing::PeersBinDir() + "/commit-dir") + " " +
                                 Quote(git->data_dir()) + " guestbook-lite " +
                                 Quote(RepoRoot() + "/examples/apps/guestbook-lite") + " second");
  ASSERT_EQ(commit.exit_code, 0) << commit.output;
  std::string second = commit.output.substr(0, commit.output.find_first_of(" \n"));
  ASSERT_EQ(second.size(), 40U) << commit.output;
  ASSERT_NE(second, first);
  Kubectl(*spoke,
          "-n openshift-gitops annotate applications.argoproj.io gl-helm "
          "argocd.argoproj.io/refresh=normal --overwrite");
  EXPECT_TRUE(testing::WaitFor(
      [&] {
        helm = GetApp(*spoke, "gl-helm");
        return Field(helm, revision) == second && Field(helm, sync) == "Synced";
      },
      seconds(60), std::chrono::milliseconds(500)))
      << "the new commit " << second << " never became the sync revision: " << helm.dump(2);
}

TEST_F(ArgoCdSmokeTest, HubApplicationSetControllerGeneratesApplications) {
  MMI_START_PEER(hub, "kube", {"ROLE=hub"});
  MMI_START_PEER(
      argocd, "argocd",
      {"ROLE=hub", "KUBECONFIG=" + hub->Get("KUBECONFIG"), "KUBECTL=" + hub->Get("KUBECTL")});
  const std::string appset = R"(apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: smoke, namespace: openshift-gitops}
spec:
  goTemplate: true
  generators:
    - list:
        elements: [{cluster: cluster-a}, {cluster: cluster-b}]
  template:
    metadata:
      name: '{{.cluster}}-smoke'
      labels: {apps.open-cluster-management.io/pull-to-ocm-managed-cluster: "true"}
      annotations: {apps.open-cluster-management.io/ocm-managed-cluster: '{{.cluster}}'}
    spec:
      project: default
      source: {repoURL: 'git://127.0.0.1:1/none.git', targetRevision: main, path: plain}
      destination: {server: https://kubernetes.default.svc, namespace: smoke}
)";
  Kubectl(*hub, "apply -f -", appset);
  json a, b;
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        a = GetApp(*hub, "cluster-a-smoke");
        b = GetApp(*hub, "cluster-b-smoke");
        return a.is_object() && b.is_object();
      },
      seconds(60), std::chrono::milliseconds(500)))
      << "the ApplicationSet controller generated no Applications";
  EXPECT_EQ(
      Field(a, json::json_pointer(
                   "/metadata/annotations/apps.open-cluster-management.io~1ocm-managed-cluster")),
      "cluster-a");
  EXPECT_EQ(Field(a, json::json_pointer("/metadata/ownerReferences/0/kind")), "ApplicationSet");

  const json::json_pointer finalizers("/metadata/finalizers");
  ASSERT_TRUE(b.contains(finalizers)) << b.dump(2);
  EXPECT_EQ(b.at(finalizers), json::array({"resources-finalizer.argocd.argoproj.io"}));

  // One element goes: the controller deletes its Application, which the finalizer holds.
  Kubectl(
      *hub,
      "-n openshift-gitops patch applicationsets.argoproj.io smoke --type=json -p " +
          Quote(
              R"([{"op":"replace","path":"/spec/generators/0/list/elements","value":[{"cluster":"cluster-a"}]}])"));
  EXPECT_TRUE(testing::WaitFor(
      [&] {
        b = GetApp(*hub, "cluster-b-smoke");
        return b.is_object() && b.contains(json::json_pointer("/metadata/deletionTimestamp"));
      },
      seconds(60), std::chrono::milliseconds(500)))
      << "cluster-b-smoke was not deleted: " << b.dump(2);
  a = GetApp(*hub, "cluster-a-smoke");
  EXPECT_TRUE(a.is_object() && !a.contains(json::json_pointer("/metadata/deletionTimestamp")));
}

}  // namespace
}  // namespace mmi
