// Smoke test: a real etcd + kube-apiserver started by tests/peers/bin/start-kube serves TLS,
// has the hub CRDs Established, and lets a client create, read and watch an argoproj.io
// Application, with client-certificate and bearer-token authentication. A second instance
// plays a managed cluster with only the Application and AppliedManifestWork CRDs.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/support/http.h"
#include "tests/support/peer.h"

namespace mmi {
namespace {

using nlohmann::json;

class KubeSmokeTest : public ::testing::Test {
 protected:
  testing::HttpRequest Request(const testing::PeerProcess& kube, std::string method,
                               std::string path, std::string body = "") {
    testing::HttpRequest r;
    r.method = std::move(method);
    r.url = kube.Get("KUBE_API_URL") + path;
    r.body = std::move(body);
    r.ca_file = kube.Get("KUBE_CA_FILE");
    r.client_cert_file = kube.Get("KUBE_CLIENT_CERT_FILE");
    r.client_key_file = kube.Get("KUBE_CLIENT_KEY_FILE");
    r.headers["Content-Type"] = "application/json";
    r.headers["Accept"] = "application/json";
    return r;
  }
};

constexpr char kApps[] = "/apis/argoproj.io/v1alpha1/namespaces/argocd/applications";

TEST_F(KubeSmokeTest, CreatesReadsAndWatchesAnApplicationOnTheHub) {
  MMI_START_PEER(hub, "kube", {"ROLE=hub"});

  // Every CRD the hub needs is served.
  for (const char* crd : {"applications.argoproj.io", "applicationsets.argoproj.io",
                          "gitopsclusters.apps.open-cluster-management.io",
                          "placementdecisions.cluster.open-cluster-management.io",
                          "managedclusters.cluster.open-cluster-management.io",
                          "manifestworks.work.open-cluster-management.io"}) {
    auto r = testing::SendHttp(
        Request(*hub, "GET",
                std::string("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/") + crd));
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->status, 200) << crd << ": " << r->body;
    bool established = false;
    const json crd_object = json::parse(r->body);
    for (const auto& c : crd_object["status"]["conditions"]) {
      established |= c["type"] == "Established" && c["status"] == "True";
    }
    EXPECT_TRUE(established) << crd;
  }

  auto list = testing::SendHttp(Request(*hub, "GET", kApps));
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->status, 200) << list->body;
  const std::string rv = json::parse(list->body)["metadata"]["resourceVersion"];

  const json app = {
      {"apiVersion", "argoproj.io/v1alpha1"},
      {"kind", "Application"},
      {"metadata",
       {{"name", "guestbook-cluster1"},
        {"namespace", "argocd"},
        {"labels", {{"apps.open-cluster-management.io/pull-to-ocm-managed-cluster", "true"}}},
        {"annotations", {{"apps.open-cluster-management.io/ocm-managed-cluster", "cluster1"}}}}},
      {"spec",
       {{"project", "default"},
        {"source",
         {{"repoURL", "https://github.com/argoproj/argocd-example-apps"},
          {"path", "guestbook"},
          {"targetRevision", "HEAD"}}},
        {"destination",
         {{"server", "https://kubernetes.default.svc"}, {"namespace", "guestbook"}}}}}};
  auto created = testing::SendHttp(Request(*hub, "POST", kApps, app.dump()));
  ASSERT_TRUE(created.ok()) << created.status();
  ASSERT_EQ(created->status, 201) << created->body;

  auto got = testing::SendHttp(Request(*hub, "GET", std::string(kApps) + "/guestbook-cluster1"));
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->status, 200) << got->body;
  EXPECT_EQ(json::parse(got->body)["spec"]["source"]["path"], "guestbook");

  // A watch from the list's resourceVersion delivers the ADDED event (bounded by timeoutSeconds).
  auto watch = Request(*hub, "GET",
                       std::string(kApps) +
                           "?watch=1&allowWatchBookmarks=true&"
                           "timeoutSeconds=2&resourceVersion=" +
                           rv);
  watch.timeout = std::chrono::seconds(15);
  auto events = testing::SendHttp(watch);
  ASSERT_TRUE(events.ok()) << events.status();
  ASSERT_EQ(events->status, 200) << events->body;
  bool added = false;
  std::istringstream lines(events->body);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) {
      continue;
    }
    const auto e = json::parse(line);
    added |= e["type"] == "ADDED" && e["object"]["metadata"]["name"] == "guestbook-cluster1";
  }
  EXPECT_TRUE(added) << events->body;

  // Bearer-token authentication works too.
  auto with_token = Request(*hub, "GET", std::string(kApps) + "/guestbook-cluster1");
  with_token.client_cert_file.clear();
  with_token.client_key_file.clear();
  with_token.bearer_token = hub->Get("KUBE_TOKEN");
  auto by_token = testing::SendHttp(with_token);
  ASSERT_TRUE(by_token.ok()) << by_token.status();
  EXPECT_EQ(by_token->status, 200) << by_token->body;
}

TEST_F(KubeSmokeTest, ManagedClusterServesOnlyTheSpokeCrds) {
  MMI_START_PEER(spoke, "kube", {"ROLE=managed"});
  auto apps = testing::SendHttp(Request(*spoke, "GET", kApps));
  ASSERT_TRUE(apps.ok()) << apps.status();
  EXPECT_EQ(apps->status, 200) << apps->body;
  auto amw = testing::SendHttp(
      Request(*spoke, "GET", "/apis/work.open-cluster-management.io/v1/appliedmanifestworks"));
  ASSERT_TRUE(amw.ok()) << amw.status();
  EXPECT_EQ(amw->status, 200) << amw->body;
  auto gitops = testing::SendHttp(
      Request(*spoke, "GET", "/apis/apps.open-cluster-management.io/v1beta1/gitopsclusters"));
  ASSERT_TRUE(gitops.ok()) << gitops.status();
  EXPECT_EQ(gitops->status, 404);
}

}  // namespace
}  // namespace mmi
