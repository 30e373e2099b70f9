#include "libs/service/settings.h"

#include <gtest/gtest.h>

#include <map>

#include "libs/service/testing/fake_env.h"

namespace mmi::service {
namespace {

using service::testing::FakeEnv;

TEST(ServiceSettingsTest, ReadsTheSharedSectionsOverTheServiceDefaults) {
  config::YamlReader reader(R"(
kube: {kubeconfig: /k, qps: 30, requestTimeout: 5s}
store: {poolSize: 8, migrate: false}
leaderElection: {namespace: mmi, leaseDuration: 20s}
)");
  HubSettings hub{.qps = 100, .burst = 200};
  StoreSettings store;
  LeaderSettings leader{.lease_name = "mmi-x"};
  ReadHubSettings(reader.Root().Section("kube"), hub);
  ReadStoreSettings(reader.Root().Section("store"), store);
  ReadLeaderSettings(reader.Root().Section("leaderElection"), leader);
  ASSERT_TRUE(reader.Finish().ok()) << reader.Finish();
  EXPECT_EQ(hub.kubeconfig, "/k");
  EXPECT_EQ(hub.qps, 30);
  EXPECT_EQ(hub.burst, 200);
  EXPECT_EQ(hub.request_timeout, std::chrono::seconds(5));
  EXPECT_EQ(store.pool_size, 8);
  EXPECT_FALSE(store.migrate);
  EXPECT_EQ(leader.lease_namespace, "mmi");
  EXPECT_EQ(leader.lease_name, "mmi-x");
  EXPECT_EQ(leader.lease_duration, std::chrono::seconds(20));
  const kube::LeaderElectionSettings election = ElectionSettings(leader);
  EXPECT_EQ(election.lease_name, "mmi-x");
  EXPECT_TRUE(election.release_on_stop);
}

TEST(ServiceSettingsTest, UnknownKeysOfTheSharedSectionsAreRejected) {
  config::YamlReader reader("leaderElection: {leaseDuraton: 20s}\n");
  LeaderSettings leader;
  ReadLeaderSettings(reader.Root().Section("leaderElection"), leader);
  EXPECT_NE(reader.Finish().message().find("leaderElection.leaseDuraton: unknown key"),
            std::string::npos)
      << reader.Finish();
}

TEST(ServiceSettingsTest, EnvironmentFillsWhatTheFileLeftOpenAndTheDsnAlways) {
  HubSettings hub;
  StoreSettings store{.dsn = "from-file"};
  LeaderSettings leader{.lease_namespace = "configured"};
  transport::TransportSettings transport = transport::GrpcSettings{};
  ApplyCommonEnvironment(FakeEnv({{"MMI_STORE_DSN", "from-env"},
                                  {"MMI_TRANSPORT_TOKEN", "tok"},
                                  {"POD_NAMESPACE", "pod-ns"},
                                  {"KUBECONFIG", "/env/kc"},
                                  {"KUBERNETES_SERVICE_HOST", "10.0.0.1"},
                                  {"KUBERNETES_SERVICE_PORT", "443"}}),
                         hub, store, leader, transport);
  EXPECT_EQ(std::get<transport::GrpcSettings>(transport).bearer_token, "tok");
  EXPECT_EQ(store.dsn, "from-env");
  EXPECT_EQ(leader.lease_namespace, "configured");
  EXPECT_EQ(hub.kubeconfig, "/env/kc");
  EXPECT_EQ(hub.in_cluster_host, "10.0.0.1");
  EXPECT_EQ(hub.in_cluster_port, "443");
  EXPECT_FALSE(Hostname("fallback").empty());
}

TEST(ServiceSettingsTest, ValidationNamesEveryBadSharedFieldByItsPath) {
  std::vector<std::string> errors;
  ValidateCommonSettings("loud", HubSettings{}, StoreSettings{.pool_size = 0},
                         LeaderSettings{.lease_namespace = "ns",
                                        .lease_name = "l",
                                        .identity = "i",
                                        .retry_period = std::chrono::seconds(30)},
                         errors);
  const std::string all(InvalidIfAny(errors).message());
  for (const char* path :
       {"logLevel: ", "store.dsn: ", "store.poolSize: ", "kube.kubeconfig: ", "leaderElection: "}) {
    EXPECT_NE(all.find(path), std::string::npos) << path << " in " << all;
  }
  EXPECT_TRUE(InvalidIfAny({}).ok());
  errors.clear();
  ValidateCommonSettings("info",
                         HubSettings{.in_cluster_host = "10.0.0.1", .in_cluster_port = "443"},
                         StoreSettings{.dsn = "host=db"}, LeaderSettings{.enabled = false}, errors);
  EXPECT_TRUE(errors.empty()) << InvalidIfAny(errors);
}

}  // namespace
}  // namespace mmi::service
