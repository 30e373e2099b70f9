#include "services/dispatcher/settings.h"

#include <gtest/gtest.h>

#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "libs/service/testing/fake_env.h"

namespace mmi::dispatcher {
namespace {

using service::testing::FakeEnv;

constexpr char kConfig[] = R"(
logLevel: debug
watchNamespace: openshift-gitops
admin: {listenAddress: "127.0.0.1:0"}
kube: {kubeconfig: /etc/hub/kubeconfig, qps: 30, burst: 60}
store: {poolSize: 8}
leaderElection: {namespace: mmi, name: dispatcher-lease, leaseDuration: 20s}
transport:
  type: mqtt
  mqtt:
    brokerHost: broker.example.com:8883
    username: dispatcher
    sourceId: app-work-client
    tls: {caFile: /etc/mqtt/ca.pem}
    topics: {agentBroadcast: "$share/mmi/clusters/+/agentbroadcast"}
  kafka:
    bootstrapServer: ignored:9092
dispatch:
  skipLocalCluster: false
  unknownClusterRetry: 2m
  workers: 6
  maxOutbox: 5000
outbox: {maxInFlight: 64, retryMax: 10s, markLinger: 5ms}
gitopsCluster: {enabled: false, orphanSecretPolicy: DeleteWhenUndecided}
)";

TEST(SettingsTest, ParsesTheConfigFileOneSectionPerTransport) {
  auto s = ParseSettingsYaml(kConfig);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->log_level, "debug");
  EXPECT_EQ(s->watch_namespace, "openshift-gitops");
  EXPECT_EQ(s->kube.qps, 30);
  EXPECT_EQ(s->store.pool_size, 8);
  EXPECT_EQ(s->leader.lease_duration, std::chrono::seconds(20));
  const auto* mqtt = std::get_if<transport::MqttSettings>(&s->transport);
  ASSERT_NE(mqtt, nullptr);
  EXPECT_EQ(mqtt->broker_host, "broker.example.com:8883");
  EXPECT_TRUE(mqtt->tls.enabled);
  EXPECT_EQ(mqtt->topics.agent_broadcast, "$share/mmi/clusters/+/agentbroadcast");
  EXPECT_FALSE(s->reconciler.skip_local_cluster);
  EXPECT_EQ(s->reconciler.unknown_cluster_retry, std::chrono::minutes(2));
  EXPECT_EQ(s->workers, 6);
  EXPECT_EQ(s->reconciler.max_outbox, 5000U);
  EXPECT_EQ(s->outbox.max_in_flight, 64U);
  EXPECT_EQ(s->outbox.retry.max, std::chrono::seconds(10));
  EXPECT_EQ(s->outbox.mark_linger, std::chrono::milliseconds(5));
  EXPECT_FALSE(s->gitops_cluster_enabled);
  EXPECT_EQ(s->gitops_cluster.orphan_secret_policy, OrphanSecretPolicy::kDeleteWhenUndecided);
}

TEST(SettingsTest, TheOutboxBoundIsDispatchMaxOutboxAndZeroTurnsItOff) {
  EXPECT_EQ(DispatcherSettings{}.reconciler.max_outbox, 20'000U);
  auto off = ParseSettingsYaml("dispatch: {maxOutbox: 0}\n");
  ASSERT_TRUE(off.ok()) << off.status();
  EXPECT_EQ(off->reconciler.max_outbox, 0U);
  EXPECT_NE(SettingsSummary(*off).find("maxOutbox=0"), std::string::npos) << SettingsSummary(*off);
  auto bad = ParseSettingsYaml("dispatch: {maxOutbox: lots}\n");
  ASSERT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("dispatch.maxOutbox"), std::string::npos) << bad.status();
}

TEST(SettingsTest, AcceptedEventsLingerTwentyMillisecondsBeforeLeavingTheOutbox) {
  EXPECT_EQ(DispatcherSettings{}.outbox.mark_linger, std::chrono::milliseconds(20));
  EXPECT_EQ(OutboxSettings{}.mark_linger, std::chrono::milliseconds(0));  // the class: at once
  auto off = ParseSettingsYaml("outbox: {markLinger: 0}\n");
  ASSERT_TRUE(off.ok()) << off.status();
  EXPECT_EQ(off->outbox.mark_linger, std::chrono::milliseconds(0));
  auto bad = ParseSettingsYaml("outbox: {markLinger: 1m}\n");
  ASSERT_TRUE(bad.ok()) << bad.status();
  const absl::Status finalized = FinalizeSettings(*bad);
  ASSERT_EQ(finalized.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(finalized.message().find("outbox.markLinger: must be between 0 and 10s"),
            std::string::npos)
      << finalized;
}

TEST(SettingsTest, TheAckCheckIsOnByDefaultAndItsWindowIsValidated) {
  const AckCheckSettings defaults;
  EXPECT_TRUE(defaults.enabled);
  EXPECT_EQ(defaults.interval, std::chrono::seconds(15));
  EXPECT_EQ(defaults.grace, std::chrono::seconds(30));
  EXPECT_EQ(defaults.timeout, std::chrono::seconds(120));
  auto set = ParseSettingsYaml(
      "dispatch: {ackCheck: {enabled: false, interval: 10s, grace: 20s, timeout: 2m, "
      "maxPerCheck: 50, maxWhileStalled: 7, maxBackoff: 30m}}\n");
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_FALSE(set->reconciler.ack_check.enabled);
  EXPECT_EQ(set->reconciler.ack_check.interval, std::chrono::seconds(10));
  EXPECT_EQ(set->reconciler.ack_check.timeout, std::chrono::minutes(2));
  EXPECT_EQ(set->reconciler.ack_check.max_per_check, 50);
  EXPECT_EQ(set->reconciler.ack_check.max_while_stalled, 7);
  EXPECT_EQ(set->reconciler.ack_check.max_backoff, std::chrono::minutes(30));
  auto bad = ParseSettingsYaml("dispatch: {ackCheck: {grace: 5m, timeout: 1m}}\n");
  ASSERT_TRUE(bad.ok()) << bad.status();
  const absl::Status finalized = FinalizeSettings(*bad);
  ASSERT_EQ(finalized.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(finalized.message().find("dispatch.ackCheck.timeout: must be >= "), std::string::npos)
      << finalized;
}

TEST(SettingsTest, TheFirstListIsAutoUnlessSetToPagedOrStreamed) {
  EXPECT_EQ(DispatcherSettings{}.first_list, FirstList::kAuto);
  for (const auto& [text, want] :
       {std::pair{"auto", FirstList::kAuto}, std::pair{"paged", FirstList::kPaged},
        std::pair{"streamed", FirstList::kStreamed}}) {
    auto s = ParseSettingsYaml(absl::StrCat("dispatch: {firstList: ", text, "}\n"));
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ(s->first_list, want) << text;
    EXPECT_NE(SettingsSummary(*s).find(absl::StrCat("firstList=", text)), std::string::npos)
        << SettingsSummary(*s);
  }
  auto bad = ParseSettingsYaml("dispatch: {firstList: chunked}\n");
  ASSERT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("dispatch.firstList: must be auto, paged or streamed"),
            std::string::npos)
      << bad.status();
}

TEST(SettingsTest, AutoStreamsTheFirstListOnlyOnAFirstInstall) {
  int asked = 0;
  const auto store_says = [&asked](absl::StatusOr<bool> answer) {
    return [&asked, answer] {
      ++asked;
      return answer;
    };
  };
  DispatcherSettings s;                                         // auto
  EXPECT_TRUE(ChooseFirstList(s, store_says(false)).streamed);  // nothing dispatched yet
  EXPECT_FALSE(ChooseFirstList(s, store_says(true)).streamed);  // a restart
  const FirstListChoice failed =
      ChooseFirstList(s, store_says(absl::UnavailableError("connection refused")));
  EXPECT_FALSE(failed.streamed);  // unknown: paged, the safe choice
  EXPECT_TRUE(failed.warn);
  EXPECT_NE(failed.why.find("connection refused"), std::string::npos) << failed.why;
  EXPECT_EQ(asked, 3);

  asked = 0;
  s.first_list_by_pages = true;  // asks for a paged first list
  EXPECT_FALSE(ChooseFirstList(s, store_says(false)).streamed);
  s.first_list = FirstList::kStreamed;
  EXPECT_TRUE(ChooseFirstList(s, store_says(true)).streamed);
  s.first_list = FirstList::kPaged;
  EXPECT_FALSE(ChooseFirstList(s, store_says(false)).streamed);
  EXPECT_EQ(asked, 0) << "the store is asked only for auto without firstListByPages";
}

TEST(SettingsTest, ReportsEveryBadFieldByItsPath) {
  auto s = ParseSettingsYaml(R"(
kube: {qps: fast}
transport: {type: carrier-pigeon}
dispatch: {unknownClusterRetry: soon}
)");
  ASSERT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string msg(s.status().message());
  EXPECT_NE(msg.find("kube.qps"), std::string::npos) << msg;
  EXPECT_NE(msg.find("transport.type"), std::string::npos) << msg;
  EXPECT_NE(msg.find("dispatch.unknownClusterRetry"), std::string::npos) << msg;
}

TEST(SettingsTest, RejectsUnknownKeysByTheirFullPath) {
  auto s = ParseSettingsYaml(R"(
logLevl: debug
dispatch: {wokers: 6}
transport: {type: mqtt, mqtt: {brokerHost: "b:1883", tls: {cafile: /ca.pem}}}
)");
  ASSERT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string msg(s.status().message());
  EXPECT_NE(msg.find("logLevl: unknown key"), std::string::npos) << msg;
  EXPECT_NE(msg.find("dispatch.wokers: unknown key"), std::string::npos) << msg;
  EXPECT_NE(msg.find("transport.mqtt.tls.cafile: unknown key"), std::string::npos) << msg;
  // The kube section is the shared one: requestTimeout is accepted by the dispatcher too.
  auto k = ParseSettingsYaml("kube: {requestTimeout: 10s}\n");
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ(k->kube.request_timeout, std::chrono::seconds(10));
  EXPECT_EQ(DispatcherSettings{}.kube.request_timeout, std::chrono::seconds(60));
}

TEST(SettingsTest, EnvironmentAndFinalizeFillSecretsIdentityAndOwnGroups) {
  auto s = ParseSettingsYaml(kConfig);
  ASSERT_TRUE(s.ok());
  ApplyEnvironment(*s, FakeEnv({{"MMI_STORE_DSN", "postgresql://u:p@db/mmi"},
                                {"MMI_TRANSPORT_PASSWORD", "secret"},
                                {"POD_NAME", "dispatcher-0"},
                                {"POD_NAMESPACE", "ignored-because-configured"}}));
  const absl::Status finalized = FinalizeSettings(*s);
  ASSERT_TRUE(finalized.ok()) << finalized;
  EXPECT_EQ(s->store.dsn, "postgresql://u:p@db/mmi");
  const auto& mqtt = std::get<transport::MqttSettings>(s->transport);
  EXPECT_EQ(mqtt.password, "secret");
  EXPECT_EQ(mqtt.shared_group, "mmi-dispatcher");  // never steals the status sink's events
  EXPECT_EQ(s->leader.lease_namespace, "mmi");
  EXPECT_EQ(s->leader.identity.rfind("dispatcher-0_", 0), 0U) << s->leader.identity;
  EXPECT_EQ(s->reconciler.event_instance, "dispatcher-0");
  EXPECT_EQ(s->reconciler.payload.source_id, "app-work-client");
  EXPECT_EQ(s->reconciler.version_mode, VersionMode::kCounter);
  EXPECT_EQ(SettingsSummary(*s).find("secret"), std::string::npos);
  EXPECT_EQ(SettingsSummary(*s).find("u:p@db"), std::string::npos);
}

TEST(SettingsTest, MaestroRestIsReadForGrpcOnlyWithItsTokenFromTheEnvironment) {
  auto s = ParseSettingsYaml(R"(
kube: {kubeconfig: /etc/hub/kubeconfig}
transport: {type: grpc, grpc: {url: "maestro-grpc:8090"}}
maestroRest:
  url: https://maestro.maestro:8000
  timeout: 5s
  tls: {caFile: /etc/maestro/ca.crt}
  maxRequestsPerSecond: 7.5
  maxInFlight: 3
  maxQueued: 1000
  errorPause: 1m
)");
  ASSERT_TRUE(s.ok()) << s.status();
  ApplyEnvironment(*s, FakeEnv({{"MMI_STORE_DSN", "postgresql://db/mmi"},
                                {"MMI_MAESTRO_REST_TOKEN", "rest-token"}}));
  const absl::Status finalized = FinalizeSettings(*s);
  ASSERT_TRUE(finalized.ok()) << finalized;
  EXPECT_EQ(s->maestro_rest.base_url, "https://maestro.maestro:8000");
  EXPECT_TRUE(s->maestro_rest.tls.enabled);
  EXPECT_EQ(s->maestro_rest.tls.ca_file, "/etc/maestro/ca.crt");
  EXPECT_EQ(s->maestro_rest.timeout, std::chrono::seconds(5));
  EXPECT_EQ(s->maestro_rest.bearer_token, "rest-token");
  EXPECT_EQ(s->reconciler.deletion_check.max_requests_per_second, 7.5);
  EXPECT_EQ(s->reconciler.deletion_check.max_in_flight, 3);
  EXPECT_EQ(s->reconciler.deletion_check.max_queued, 1000U);
  EXPECT_EQ(s->reconciler.deletion_check.error_pause, std::chrono::minutes(1));
  EXPECT_EQ(SettingsSummary(*s).find("rest-token"), std::string::npos);
  // Off by default; set with another transport, or not an http(s) URL: refused by path.
  EXPECT_TRUE(DispatcherSettings{}.maestro_rest.base_url.empty());
  auto mqtt = ParseSettingsYaml(
      "transport: {type: mqtt, mqtt: {brokerHost: \"b:1883\"}}\n"
      "maestroRest: {url: \"maestro:8000\", maxRequestsPerSecond: 0}\n");
  ASSERT_TRUE(mqtt.ok()) << mqtt.status();
  const absl::Status bad = FinalizeSettings(*mqtt);
  EXPECT_NE(bad.message().find("maestroRest.url: only used with transport.type grpc"),
            std::string::npos)
      << bad;
  EXPECT_NE(bad.message().find("maestroRest.maxRequestsPerSecond: must be > 0"), std::string::npos)
      << bad;
  auto grpc = ParseSettingsYaml(
      "transport: {type: grpc, grpc: {url: \"m:8090\"}}\nmaestroRest: {url: \"maestro:8000\"}\n");
  ASSERT_TRUE(grpc.ok()) << grpc.status();
  EXPECT_NE(FinalizeSettings(*grpc).message().find("maestroRest.url: must start with http://"),
            std::string::npos);
}

// What FinalizeSettings requires besides the section under test.
constexpr char kRequired[] =
    "kube: {kubeconfig: /etc/hub/kubeconfig}\n"
    "transport: {type: mqtt, mqtt: {brokerHost: \"broker:1883\"}}\n";

TEST(SettingsTest, ManifestDeliveryIsOffWithoutARepoServerAddressAndReadsEveryField) {
  const DispatcherSettings defaults;
  EXPECT_FALSE(defaults.manifests.enabled());
  EXPECT_EQ(defaults.manifests.resolve_interval, std::chrono::seconds(180));
  EXPECT_EQ(defaults.manifests.render_timeout, std::chrono::seconds(60));
  EXPECT_EQ(defaults.manifests.argocd_namespace, "argocd");
  EXPECT_TRUE(defaults.manifests.repo_server.tls.enabled);

  auto s = ParseSettingsYaml(absl::StrCat(kRequired, R"(
manifests:
  repoServer:
    address: argocd-repo-server.gitops.svc:8081
    tls: {caFile: /etc/repo/ca.crt, serverName: argocd-repo-server}
  resolveInterval: 90s
  renderTimeout: 20s
  argocdNamespace: gitops
  maxRendersInFlight: 8
)"));
  ASSERT_TRUE(s.ok()) << s.status();
  ApplyEnvironment(*s, FakeEnv({{"MMI_STORE_DSN", "postgresql://db/mmi"}}));
  const absl::Status finalized = FinalizeSettings(*s);
  ASSERT_TRUE(finalized.ok()) << finalized;
  EXPECT_TRUE(s->manifests.enabled());
  EXPECT_EQ(s->manifests.repo_server.address, "argocd-repo-server.gitops.svc:8081");
  EXPECT_EQ(s->manifests.repo_server.tls.ca_file, "/etc/repo/ca.crt");
  EXPECT_EQ(s->manifests.repo_server.tls.server_name, "argocd-repo-server");
  EXPECT_FALSE(s->manifests.repo_server.tls.insecure_skip_verify);
  EXPECT_EQ(s->manifests.resolve_interval, std::chrono::seconds(90));
  EXPECT_EQ(s->manifests.render_timeout, std::chrono::seconds(20));
  EXPECT_EQ(s->manifests.argocd_namespace, "gitops");
  EXPECT_EQ(s->manifests.max_renders_in_flight, 8);
  EXPECT_NE(SettingsSummary(*s).find("manifests=argocd-repo-server.gitops.svc:8081"),
            std::string::npos);
}

TEST(SettingsTest, ManifestDeliveryErrorsNameTheirFieldOnlyWhenTheModeIsOn) {
  struct Case {
    const char* yaml;
    const char* error;  // "" = valid
  };
  const Case cases[] = {
      // Off: nothing else is checked.
      {"manifests: {maxRendersInFlight: 0, argocdNamespace: Bad_NS}", ""},
      {"manifests: {repoServer: {address: \"repo:8081\", tls: {enabled: false}}}", ""},
      {"manifests: {repoServer: {address: \"repo:8081\", tls: {insecureSkipVerify: true}}}", ""},
      {"manifests: {repoServer: {address: repo-server}}",
       "manifests.repoServer.address: must be host:port"},
      {"manifests: {repoServer: {address: \"https://repo:8081\"}}",
       "manifests.repoServer.address: must be host:port"},
      {"manifests: {repoServer: {address: \"repo:8081\", tls: {enabled: false, caFile: /ca}}}",
       "manifests.repoServer.tls: caFile and insecureSkipVerify need tls.enabled true"},
      {"manifests: {repoServer: {address: \"repo:8081\", tls: {caFile: /ca, "
       "insecureSkipVerify: true}}}",
       "manifests.repoServer.tls.insecureSkipVerify: verifies nothing"},
      {"manifests: {repoServer: {address: \"repo:8081\"}, resolveInterval: 0s}",
       "manifests.resolveInterval: must be > 0"},
      {"manifests: {repoServer: {address: \"repo:8081\"}, renderTimeout: 0s}",
       "manifests.renderTimeout: must be > 0"},
      {"manifests: {repoServer: {address: \"repo:8081\"}, argocdNamespace: Bad_NS}",
       "manifests.argocdNamespace: must be a DNS-1123 label, got 'Bad_NS'"},
      {"manifests: {repoServer: {address: \"repo:8081\"}, maxRendersInFlight: 0}",
       "manifests.maxRendersInFlight: must be >= 1"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.yaml);
    auto s = ParseSettingsYaml(absl::StrCat(kRequired, c.yaml));
    ASSERT_TRUE(s.ok()) << s.status();
    ApplyEnvironment(*s, FakeEnv({{"MMI_STORE_DSN", "postgresql://db/mmi"}}));
    const absl::Status finalized = FinalizeSettings(*s);
    if (std::string(c.error).empty()) {
      EXPECT_TRUE(finalized.ok()) << finalized;
    } else {
      EXPECT_NE(finalized.message().find(c.error), std::string::npos) << finalized;
    }
  }
  // The client has no client certificates: such keys are refused by path.
  auto unknown = ParseSettingsYaml("manifests: {repoServer: {tls: {certFile: /c.pem}}}");
  EXPECT_NE(unknown.status().message().find("manifests.repoServer.tls.certFile: unknown key"),
            std::string::npos)
      << unknown.status();
}

TEST(SettingsTest, FlagsOverrideTheFileAndMissingRequiredFieldsFail) {
  const char* argv[] = {"dispatcher",     "--store-dsn", "host=db",     "--kubeconfig", "/k",
                        "--leader-elect", "false",       "--log-level", "warn"};
  auto s = LoadSettings(9, argv, FakeEnv({}));
  ASSERT_FALSE(s.ok());  // transport.mqtt.brokerHost is required
  EXPECT_NE(s.status().message().find("brokerHost"), std::string::npos) << s.status();

  auto grpc = ParseSettingsYaml("transport: {type: grpc, grpc: {url: 'maestro:8090'}}");
  ASSERT_TRUE(grpc.ok()) << grpc.status();
  grpc->store.dsn = "host=db";
  grpc->kube.kubeconfig = "/k";
  ASSERT_TRUE(FinalizeSettings(*grpc).ok());
  EXPECT_EQ(grpc->reconciler.version_mode, VersionMode::kMaestro);
  EXPECT_FALSE(grpc->spec_resync);
  EXPECT_EQ(std::get<transport::GrpcSettings>(grpc->transport).source_id, "app-work-client");
}

}  // namespace
}  // namespace mmi::dispatcher
