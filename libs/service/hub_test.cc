#include "libs/service/hub.h"

#include <gtest/gtest.h>

#include "libs/common/testing/fake_clock.h"
#include "libs/transport/testing/metric_value.h"
#include "prometheus/registry.h"

namespace mmi::service {
namespace {

TEST(ConnectHubTest, NamesTheKubeConfigProblem) {
  testing::FakeClock clock;
  auto hub = ConnectHub(HubSettings{.kubeconfig = "/nonexistent/kubeconfig"}, "dispatcher", clock,
                        nullptr);
  ASSERT_FALSE(hub.ok());
  EXPECT_EQ(std::string(hub.status().message()).rfind("kube config: ", 0), 0U) << hub.status();
}

TEST(LeaderCampaignTest, WithoutALeaseLeadsAtStartAndExportsIt) {
  testing::FakeClock clock;
  prometheus::Registry registry;
  int started = 0;
  auto campaign = LeaderCampaign::Create(
      kube::HttpKubeClientSettings{}, LeaderSettings{.enabled = false}, clock, registry,
      kube::LeaderCallbacks{
          .on_started_leading = [&] { ++started; }, .on_stopped_leading = {}, .on_new_leader = {}});
  ASSERT_TRUE(campaign.ok()) << campaign.status();
  EXPECT_FALSE((*campaign)->leading());
  EXPECT_EQ(transport::testing::MetricValue(registry, "mmi_leader_election_is_leader", {}), 0);
  ASSERT_TRUE((*campaign)->Start().ok());
  EXPECT_TRUE((*campaign)->leading());
  EXPECT_EQ(started, 1);
  EXPECT_EQ(transport::testing::MetricValue(registry, "mmi_leader_election_is_leader", {}), 1);
  (*campaign)->Stop();
}

}  // namespace
}  // namespace mmi::service
