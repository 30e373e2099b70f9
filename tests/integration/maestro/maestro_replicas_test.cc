// Two Maestro servers on one database (start-maestro REPLICAS=2), agents on Maestro's MQTT
// topics, our gRPC source clients on both. How the instances share the work is written down in
// docs/adr/0005-maestro-server-from-the-module-proxy.md: every instance's spec worker competes for
// each spec event with a fail-fast advisory lock, so exactly one sends it; an agent's status goes
// to one instance (MQTT shared subscription), which stores it as a status event that every
// instance then broadcasts to its own source subscribers. So a resource published on either
// instance reaches the agent once, and its status reaches subscribers on both instances.
#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "libs/cloudevents/maestro_events.h"
#include "libs/cloudevents/resource_id.h"
#include "tests/integration/maestro/maestro_test_support.h"
#include "tests/support/peer.h"
#include "tests/support/wait.h"

namespace mmi {
namespace {

using cloudevents::Event;
using std::chrono::seconds;

using maestro_test::Is;
using maestro_test::kCluster;
using maestro_test::kSource;
using maestro_test::SourceClients;
using maestro_test::SourceSettings;

constexpr size_t kReplicas = 2;
constexpr int kWorks = 12;

// Sum over the instances of counter `name`'s samples with status="success"; nullopt when an
// instance's /metrics cannot be read.
std::optional<double> SuccessTotal(const std::vector<std::string>& metrics_urls,
                                   const std::string& name) {
  double sum = 0;
  for (const std::string& url : metrics_urls) {
    std::optional<double> value = maestro_test::ScrapeCounter(url, name, {{"status", "success"}});
    if (!value.has_value()) {
      return std::nullopt;
    }
    sum += *value;
  }
  return sum;
}

bool AppliedStatusFor(const std::string& resource_id, const Event& e) {
  return Is(cloudevents::kStatusUpdateRequestType, resource_id)(e) &&
         maestro_test::HasConditionTrue(e, "Applied");
}

TEST(MaestroReplicasTest, TwoInstancesDeliverEachSpecOnceAndBothRelayEveryStatus) {
  MMI_START_PEER(pg, "postgres");
  MMI_START_PEER(broker, "mosquitto");
  std::vector<std::string> args = maestro_test::PeerArgs(*pg);
  args.push_back("BROKER=mqtt");
  args.push_back("MQTT_HOST=" + broker->Get("MQTT_HOST"));
  args.push_back("REPLICAS=" + std::to_string(kReplicas));
  MMI_START_PEER(maestro, "maestro", args);
  ASSERT_EQ(maestro->Get("MAESTRO_REPLICAS"), std::to_string(kReplicas));
  const std::vector<std::string> grpc_addrs =
      absl::StrSplit(maestro->Get("MAESTRO_GRPC_ADDRS"), ',');
  const std::vector<std::string> rests = absl::StrSplit(maestro->Get("MAESTRO_REST_URLS"), ',');
  const std::vector<std::string> metrics =
      absl::StrSplit(maestro->Get("MAESTRO_METRICS_URLS"), ',');
  ASSERT_EQ(grpc_addrs.size(), kReplicas);
  ASSERT_EQ(rests.size(), kReplicas);
  ASSERT_EQ(metrics.size(), kReplicas);
  ASSERT_NE(grpc_addrs[0], grpc_addrs[1]);

  // The consumer made through the second instance's REST API is known to the first: one database.
  ASSERT_TRUE(maestro_test::Registry(rests[1]).EnsureConsumer(kCluster).ok());
  ASSERT_EQ(maestro_test::Registry(rests[0]).ConsumerExists(kCluster).value_or(false), true);

  maestro_test::MqttClusterAgent agent(broker->Get("MQTT_HOST"), maestro->Get("MAESTRO_SOURCE_ID"));
  ASSERT_TRUE(agent.Start().ok());
  SourceClients first(SourceSettings(grpc_addrs[0]));
  SourceClients second(SourceSettings(grpc_addrs[1]));
  ASSERT_TRUE(first.Start().ok());
  ASSERT_TRUE(second.Start().ok());
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        return first.publisher->connected() && first.subscriber->connected() &&
               second.publisher->connected() && second.subscriber->connected();
      },
      seconds(20)))
      << "gRPC source clients never connected to both instances";

  // Publish through both instances' source API, alternately.
  std::vector<std::string> ids;
  for (int i = 0; i < kWorks; ++i) {
    const std::string name = "replica-work-" + std::to_string(i);
    ids.push_back(cloudevents::WorkResourceId(kSource, kCluster, name));
    SourceClients& via = i % 2 == 0 ? first : second;
    ASSERT_TRUE(via.PublishAndWait(maestro_test::CreateRequest(kCluster, name)).ok()) << name;
  }
  for (const std::string& id : ids) {
    std::optional<Event> spec =
        agent.specs().Await(Is(cloudevents::kSpecCreateRequestType, id), seconds(30));
    ASSERT_TRUE(spec.has_value()) << "the create of " << id << " never reached the agent";
    ASSERT_TRUE(agent.Answer(*spec).ok()) << id;
  }
  // Each status reached one instance over MQTT; subscribers on both instances get it.
  for (const std::string& id : ids) {
    auto applied = [&](const Event& e) { return AppliedStatusFor(id, e); };
    EXPECT_TRUE(first.statuses.Await(applied, seconds(30)).has_value())
        << "no Applied status for " << id << " on the first instance's subscription";
    EXPECT_TRUE(second.statuses.Await(applied, seconds(30)).has_value())
        << "no Applied status for " << id << " on the second instance's subscription";
  }

  // Exactly one instance sent each spec event: the successes over both instances add up to the
  // creates (a lost lock is counted as skipped, not as success), once their counters caught up.
  const std::string spec_total = "spec_controller_event_reconcile_total";
  EXPECT_TRUE(testing::WaitFor(
      [&] { return SuccessTotal(metrics, spec_total).value_or(0) >= kWorks; }, seconds(10)));
  EXPECT_EQ(SuccessTotal(metrics, spec_total), kWorks);
  // Every instance handled every status event (no lock on that side): the status work is done
  // once per instance, which is why replicas do not raise the status side's rate.
  for (const std::string& url : metrics) {
    EXPECT_GE(maestro_test::ScrapeCounter(url, "status_controller_event_reconcile_total",
                                          {{"status", "success"}})
                  .value_or(0),
              kWorks)
        << url;
  }
}

}  // namespace
}  // namespace mmi
