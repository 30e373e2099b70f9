// Security as shipped (examples/values-grpc.yaml) against the real Maestro server: TLS 1.3 on the
// gRPC source API and the two authentication types the pinned server offers with it
// (--grpc-authn-type mtls or token; tests/peers/bin/start-maestro TLS=1 AUTHN=...). Both make
// Maestro ask a kube-apiserver (tests/peers/bin/start-kube) whether the caller may `pub`/`sub` on
// the non-resource URL /sources/<source id> (SubjectAccessReview), and token also who the token
// belongs to (TokenReview).
//
// Each test proves the right credentials work (publish, the status or the subscription back),
// that wrong ones are refused, that our clients count every refusal
// (mmi_transport_auth_failures_total) but log it once per outage, and that they come back by
// themselves once the credentials are right: the server trusting the client's CA after a
// restart (mTLS), the token file holding a valid token (token).
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "libs/cloudevents/maestro_events.h"
#include "libs/cloudevents/resource_id.h"
#include "libs/common/testing/log_capture.h"
#include "libs/transport/testing/metric_value.h"
#include "tests/integration/maestro/maestro_test_support.h"
#include "tests/support/peer.h"
#include "tests/support/wait.h"

namespace mmi {
namespace {

using cloudevents::Event;
using maestro_test::Is;
using maestro_test::kCluster;
using maestro_test::kSource;
using maestro_test::SourceClients;
using maestro_test::SourceSettings;
using std::chrono::seconds;

constexpr char kRefusedLog[] = "Maestro refused our credentials";
constexpr char kAcceptedLog[] = "Maestro accepts our credentials again";

double AuthFailures(SourceClients& clients, const std::string& client) {
  return transport::testing::MetricValue(clients.registry, "mmi_transport_auth_failures_total",
                                         {{"client", client}});
}

// Log lines containing `message` and `"client":"<client>"`.
int LogLines(const std::string& text, const std::string& message, const std::string& client) {
  int count = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (absl::StrContains(line, message) &&
        absl::StrContains(line, absl::StrCat("\"client\":\"", client, "\""))) {
      ++count;
    }
  }
  return count;
}

void WriteFile(const std::string& path, const std::string& text, bool append = false) {
  std::ofstream out(path, append ? std::ios::app : std::ios::trunc);
  out << text;
  ASSERT_TRUE(out.good()) << path;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// kubectl against the kube peer; fails the test on a non-zero exit.
std::string Kubectl(const testing::PeerProcess& kube, const std::string& args) {
  testing::CommandResult result = testing::RunCommand(kube.Get("KUBECTL") + " --kubeconfig " +
                                                      kube.Get("KUBECONFIG") + " " + args);
  EXPECT_EQ(result.exit_code, 0) << "kubectl " << args << ": " << result.output;
  return result.output;
}

// RBAC on the kube-apiserver Maestro asks: `subject` (e.g. "Group mmi-sources") may pub and sub
// on our source, as upstream Maestro's docs/grpc.md grants it.
void GrantSource(const testing::PeerProcess& kube, const std::string& subject_yaml) {
  const std::string file = kube.data_dir() + "/grant.yaml";
  WriteFile(file, absl::StrCat(R"(apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: mmi-source-pub-sub}
rules:
- nonResourceURLs: ["/sources/)",
                               kSource, R"("]
  verbs: ["pub", "sub"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: mmi-source-pub-sub}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: mmi-source-pub-sub}
subjects:
- )",
                               subject_yaml, "\n"));
  Kubectl(kube, "apply -f " + file);
}

transport::GrpcSettings TlsSettings(const testing::PeerProcess& maestro) {
  transport::GrpcSettings settings = SourceSettings(maestro.Get("MAESTRO_GRPC_ADDR"));
  settings.tls.enabled = true;
  settings.tls.ca_file = maestro.Get("MAESTRO_GRPC_CA_FILE");
  return settings;
}

TEST(MaestroAuthTest, MtlsServesOurCertificateRefusesAnotherCasOnceAndTakesItOnceTrusted) {
  MMI_START_PEER(pg, "postgres");
  MMI_START_PEER(kube, "kube");
  MMI_START_PEER(broker, "mosquitto");
  // start-maestro's client certificates carry CN=mmi-source-client, O=mmi-sources.
  GrantSource(*kube, "{kind: Group, name: mmi-sources, apiGroup: rbac.authorization.k8s.io}");
  std::vector<std::string> args = maestro_test::PeerArgs(*pg);
  args.insert(args.end(), {"BROKER=mqtt", "MQTT_HOST=" + broker->Get("MQTT_HOST"), "TLS=1",
                           "AUTHN=mtls", "KUBECONFIG=" + kube->Get("KUBECONFIG")});
  MMI_START_PEER(maestro, "maestro", args);
  ASSERT_TRUE(
      maestro_test::Registry(maestro->Get("MAESTRO_REST_URL")).EnsureConsumer(kCluster).ok());
  testing::LogCapture logs;

  // Our certificate (signed by the CA Maestro trusts): a bundle goes out, its status comes back.
  {
    maestro_test::MqttClusterAgent agent(broker->Get("MQTT_HOST"),
                                         maestro->Get("MAESTRO_SOURCE_ID"));
    ASSERT_TRUE(agent.Start().ok());
    transport::GrpcSettings settings = TlsSettings(*maestro);
    settings.tls.client_cert_file = maestro->Get("MAESTRO_GRPC_CLIENT_CERT_FILE");
    settings.tls.client_key_file = maestro->Get("MAESTRO_GRPC_CLIENT_KEY_FILE");
    SourceClients source(settings);
    ASSERT_TRUE(source.Start().ok());
    ASSERT_TRUE(testing::WaitFor(
        [&] { return source.publisher->connected() && source.subscriber->connected(); },
        seconds(20)))
        << "gRPC source clients with the right certificate never connected over mTLS";
    const std::string resource_id = cloudevents::WorkResourceId(kSource, kCluster, "mtls-work");
    ASSERT_TRUE(source.PublishAndWait(maestro_test::CreateRequest(kCluster, "mtls-work")).ok());
    std::optional<Event> spec =
        agent.specs().Await(Is(cloudevents::kSpecCreateRequestType, resource_id), seconds(30));
    ASSERT_TRUE(spec.has_value()) << "the create never reached the agent";
    ASSERT_TRUE(agent.Answer(*spec).ok());
    EXPECT_TRUE(
        source.statuses.Await(Is(cloudevents::kStatusUpdateRequestType, resource_id), seconds(30))
            .has_value())
        << "no status for " << resource_id << " on the mTLS Subscribe stream";
    EXPECT_EQ(AuthFailures(source, "subscriber"), 0.0);
    EXPECT_EQ(AuthFailures(source, "publisher"), 0.0);
  }

  // The same subject signed by another CA: the TLS handshake fails, again and again.
  transport::GrpcSettings other = TlsSettings(*maestro);
  other.tls.client_cert_file = maestro->Get("MAESTRO_GRPC_OTHER_CLIENT_CERT_FILE");
  other.tls.client_key_file = maestro->Get("MAESTRO_GRPC_OTHER_CLIENT_KEY_FILE");
  {
    SourceClients refused(other);
    ASSERT_TRUE(refused.Start().ok());
    // Nothing is published yet: the publisher's watcher finds the refusal on its own.
    ASSERT_TRUE(testing::WaitFor(
        [&] {
          return AuthFailures(refused, "subscriber") >= 3 &&
                 AuthFailures(refused, "publisher") >= 1;
        },
        seconds(30)))
        << "refusals of a certificate from another CA not counted: subscriber "
        << AuthFailures(refused, "subscriber") << ", publisher "
        << AuthFailures(refused, "publisher");
    const absl::Status published =
        refused.PublishAndWait(maestro_test::CreateRequest(kCluster, "refused-work"));
    EXPECT_EQ(published.code(), absl::StatusCode::kUnavailable) << published;
    EXPECT_FALSE(refused.publisher->connected());
    EXPECT_FALSE(refused.subscriber->connected());

    // The operator makes Maestro trust that CA too and restarts it: the same clients connect by
    // themselves.
    WriteFile(maestro->Get("MAESTRO_GRPC_CLIENT_CA_FILE"),
              ReadFile(maestro->Get("MAESTRO_GRPC_OTHER_CA_FILE")), /*append=*/true);
    testing::CommandResult restarted = testing::RunCommand(
        testing::PeersBinDir() + "/restart-maestro " + maestro->data_dir() + " SIGNAL=KILL");
    ASSERT_EQ(restarted.exit_code, 0) << restarted.output;
    ASSERT_TRUE(testing::WaitFor(
        [&] { return refused.publisher->connected() && refused.subscriber->connected(); },
        seconds(30)))
        << "the clients did not come back once Maestro trusted their CA";
    EXPECT_TRUE(refused.PublishAndWait(maestro_test::CreateRequest(kCluster, "trusted-work")).ok());
    std::cout << "[ maestro ] mTLS refusals counted: subscriber "
              << AuthFailures(refused, "subscriber") << ", publisher "
              << AuthFailures(refused, "publisher") << "\n";
  }
  const std::string text = logs.text();
  EXPECT_EQ(LogLines(text, kRefusedLog, "subscriber"), 1) << text;
  EXPECT_EQ(LogLines(text, kRefusedLog, "publisher"), 1) << text;
  EXPECT_EQ(LogLines(text, kAcceptedLog, "subscriber"), 1) << text;
  EXPECT_EQ(LogLines(text, kAcceptedLog, "publisher"), 1) << text;
}

TEST(MaestroAuthTest, TokenIsCheckedByTokenReviewRefusedOnceAndTakenFromTheFileWhenFixed) {
  MMI_START_PEER(pg, "postgres");
  MMI_START_PEER(kube, "kube");
  Kubectl(*kube, "-n default create serviceaccount mmi-source");
  Kubectl(*kube, "-n default create serviceaccount mmi-stranger");
  GrantSource(*kube, "{kind: ServiceAccount, name: mmi-source, namespace: default}");
  std::vector<std::string> args = maestro_test::PeerArgs(*pg);
  args.insert(args.end(),
              {"BROKER=grpc", "TLS=1", "AUTHN=token", "KUBECONFIG=" + kube->Get("KUBECONFIG")});
  MMI_START_PEER(maestro, "maestro", args);
  const std::string rest = maestro->Get("MAESTRO_REST_URL");
  ASSERT_TRUE(maestro_test::Registry(rest).EnsureConsumer(kCluster).ok());
  const std::string token =
      std::string(absl::StripAsciiWhitespace(Kubectl(*kube, "-n default create token mmi-source")));
  const std::string stranger = std::string(
      absl::StripAsciiWhitespace(Kubectl(*kube, "-n default create token mmi-stranger")));
  ASSERT_FALSE(token.empty());

  // No token: Maestro's interceptor answers UNAUTHENTICATED.
  {
    SourceClients anonymous(TlsSettings(*maestro));
    ASSERT_TRUE(anonymous.Start().ok());
    const absl::Status published =
        anonymous.PublishAndWait(maestro_test::CreateRequest(kCluster, "anonymous-work"));
    EXPECT_EQ(published.code(), absl::StatusCode::kUnauthenticated) << published;
  }
  // A valid token of a service account without the grant: the SubjectAccessReview says no.
  {
    transport::GrpcSettings settings = TlsSettings(*maestro);
    settings.bearer_token = stranger;
    SourceClients unauthorized(settings);
    ASSERT_TRUE(unauthorized.Start().ok());
    const absl::Status published =
        unauthorized.PublishAndWait(maestro_test::CreateRequest(kCluster, "stranger-work"));
    EXPECT_EQ(published.code(), absl::StatusCode::kPermissionDenied) << published;
  }

  // A wrong token in the token file: refused on every try, logged once.
  testing::LogCapture logs;
  const std::string token_file = maestro->data_dir() + "/client.token";
  WriteFile(token_file, "not-a-token\n");
  transport::GrpcSettings settings = TlsSettings(*maestro);
  settings.token_file = token_file;
  {
    SourceClients source(settings);
    ASSERT_TRUE(source.Start().ok());
    ASSERT_TRUE(
        testing::WaitFor([&] { return AuthFailures(source, "subscriber") >= 3; }, seconds(30)))
        << "the subscriber did not count 3 refusals of a wrong token";
    for (int i = 0; i < 3; ++i) {
      const absl::Status published =
          source.PublishAndWait(maestro_test::CreateRequest(kCluster, "wrong-token-work"));
      EXPECT_EQ(published.code(), absl::StatusCode::kUnauthenticated) << published;
    }
    EXPECT_GE(AuthFailures(source, "publisher"), 3.0);
    EXPECT_FALSE(source.subscriber->connected());

    // The right token lands in the file (a rotated or corrected Secret): the clients re-read it
    // after a refusal and come back without a restart.
    WriteFile(token_file, token + "\n");
    ASSERT_TRUE(testing::WaitFor([&] { return source.subscriber->connected(); }, seconds(30)))
        << "the subscriber did not pick up the corrected token file";
    const std::string resource_id = cloudevents::WorkResourceId(kSource, kCluster, "token-work");
    ASSERT_TRUE(source.PublishAndWait(maestro_test::CreateRequest(kCluster, "token-work")).ok());
    EXPECT_EQ(
        maestro_test::RestGet(rest + "/api/maestro/v1/resource-bundles/" + resource_id).status,
        200);
  }
  const std::string text = logs.text();
  EXPECT_EQ(LogLines(text, kRefusedLog, "subscriber"), 1) << text;
  EXPECT_EQ(LogLines(text, kRefusedLog, "publisher"), 1) << text;
  EXPECT_EQ(LogLines(text, kAcceptedLog, "subscriber"), 1) << text;
  EXPECT_EQ(LogLines(text, kAcceptedLog, "publisher"), 1) << text;
}

}  // namespace
}  // namespace mmi
