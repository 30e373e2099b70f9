// The real Maestro server (tests/peers/bin/start-maestro: the pinned server on the project's
// PostgreSQL, and mosquitto or its own gRPC broker towards the agents) driven by the project's
// own gRPC source clients (libs/transport/grpc), with fleet-sim's agent code (MqttAgentTransport,
// ClusterAgent) playing consumer cluster1's work agent on Maestro's MQTT topics
// (maestro-protocol.md §3.2). A resource goes source -> Maestro -> agent, its status comes back
// through the source subscription, Maestro's REST API shows it, and its deletion is confirmed.
// The second test kills the server (SIGKILL) and starts it again on the same ports: the clients
// must come back by themselves. The third publishes bursts of updates within the publisher's
// bound on calls in flight, which Maestro must serve (a starved connection pool fails them).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "libs/cloudevents/maestro_events.h"
#include "libs/cloudevents/manifest_bundle.h"
#include "libs/cloudevents/resource_id.h"
#include "libs/common/clock.h"
#include "libs/transport/errors.h"
#include "libs/transport/testing/metric_value.h"
#include "tests/integration/maestro/maestro_test_support.h"
#include "tests/support/peer.h"
#include "tests/support/wait.h"

namespace mmi {
namespace {

using cloudevents::Event;
using std::chrono::milliseconds;
using std::chrono::seconds;

using maestro_test::Inbox;
using maestro_test::Is;
using maestro_test::kCluster;
using maestro_test::kSource;
using maestro_test::SourceClients;
using maestro_test::SourceSettings;

// What a burst published through a window of `window` calls open at once came to.
struct BurstResult {
  int failed = 0;
  std::string first_error;
  milliseconds slowest{0};
  milliseconds total{0};
};

// Publishes `events` with at most `window` calls open at once, as the dispatcher's outbox does
// with the publisher's max_in_flight(); waits for every callback.
BurstResult PublishBurst(transport::GrpcPublisher& publisher, std::vector<Event> events,
                         size_t window) {
  absl::Mutex mu;
  size_t open = 0;
  size_t finished = 0;
  BurstResult result;
  const size_t total = events.size();
  const auto t0 = std::chrono::steady_clock::now();
  for (Event& event : events) {
    {
      absl::MutexLock lock(&mu);
      auto has_room = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { return open < window; };
      mu.Await(absl::Condition(&has_room));
      ++open;
    }
    const auto started = std::chrono::steady_clock::now();
    publisher.Publish(std::move(event), [&, started](absl::Status status) {
      const auto took =
          std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - started);
      absl::MutexLock lock(&mu);
      --open;
      ++finished;
      result.slowest = std::max(result.slowest, took);
      if (!status.ok() && result.failed++ == 0) {
        result.first_error = status.ToString();
      }
    });
  }
  absl::MutexLock lock(&mu);
  auto all_done = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { return finished == total; };
  mu.Await(absl::Condition(&all_done));
  result.total = std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - t0);
  return result;
}

TEST(MaestroServerTest, ResourceRoundTripsFromGrpcSourceToMqttAgentAndBack) {
  MMI_START_PEER(pg, "postgres");
  MMI_START_PEER(broker, "mosquitto");
  std::vector<std::string> args = maestro_test::PeerArgs(*pg);
  args.push_back("BROKER=mqtt");
  args.push_back("MQTT_HOST=" + broker->Get("MQTT_HOST"));
  MMI_START_PEER(maestro, "maestro", args);
  const std::string rest = maestro->Get("MAESTRO_REST_URL");

  // The consumer, through the project's own REST client (idempotent: a second call is a 409).
  transport::MaestroConsumerRegistry consumers = maestro_test::Registry(rest);
  ASSERT_TRUE(consumers.EnsureConsumer(kCluster).ok());
  ASSERT_TRUE(consumers.EnsureConsumer(kCluster).ok());
  ASSERT_EQ(consumers.ConsumerExists(kCluster).value_or(false), true);

  maestro_test::MqttClusterAgent agent(broker->Get("MQTT_HOST"), maestro->Get("MAESTRO_SOURCE_ID"));
  ASSERT_TRUE(agent.Start().ok());

  SourceClients source(SourceSettings(maestro->Get("MAESTRO_GRPC_ADDR")));
  ASSERT_TRUE(source.Start().ok());
  ASSERT_TRUE(testing::WaitFor(
      [&] { return source.publisher->connected() && source.subscriber->connected(); }, seconds(20)))
      << "gRPC source clients never connected to " << maestro->Get("MAESTRO_GRPC_ADDR");

  // Create: Publish returns once Maestro committed the row; Maestro then sends it to the agent.
  const std::string name = "smoke-work";
  const std::string resource_id = cloudevents::WorkResourceId(kSource, kCluster, name);
  // A cluster Maestro does not know: its error text maps to IsUnknownConsumer().
  const absl::Status unknown =
      source.PublishAndWait(maestro_test::CreateRequest("cluster-unknown", name));
  EXPECT_TRUE(transport::IsUnknownConsumer(unknown)) << unknown;
  ASSERT_TRUE(source.PublishAndWait(maestro_test::CreateRequest(kCluster, name)).ok());
  std::optional<Event> spec =
      agent.specs().Await(Is(cloudevents::kSpecCreateRequestType, resource_id), seconds(30));
  ASSERT_TRUE(spec.has_value()) << "the create never reached cluster1's sourceevents topic";
  EXPECT_EQ(spec->GetString(cloudevents::kExtClusterName).value_or(""), kCluster);
  EXPECT_EQ(spec->GetInteger(cloudevents::kExtResourceVersion).value_or(-1), 1);
  auto bundle = cloudevents::ManifestBundleOf(*spec);
  ASSERT_TRUE(bundle.ok()) << bundle.status();
  EXPECT_EQ(bundle->manifests.size(), 1U);
  ASSERT_TRUE(agent.Answer(*spec).ok());

  // The agent's status comes back through the source subscription.
  std::optional<Event> status = source.statuses.Await(
      [&](const Event& e) {
        return Is(cloudevents::kStatusUpdateRequestType, resource_id)(e) &&
               maestro_test::HasConditionTrue(e, "Applied");
      },
      seconds(30));
  ASSERT_TRUE(status.has_value()) << "no Applied status for " << resource_id << " on Subscribe";
  EXPECT_EQ(status->GetString(cloudevents::kExtClusterName).value_or(""), kCluster);

  // Maestro's REST API knows the resource by the id we computed, with that status.
  testing::HttpResponse got =
      maestro_test::RestGet(rest + "/api/maestro/v1/resource-bundles/" + resource_id);
  ASSERT_EQ(got.status, 200) << got.body;
  nlohmann::json row = nlohmann::json::parse(got.body);
  EXPECT_EQ(row["id"], resource_id);
  EXPECT_EQ(row["consumer_name"], kCluster);
  EXPECT_EQ(row["version"], 1);
  EXPECT_TRUE(row.contains("status")) << got.body;
  testing::HttpResponse listed = maestro_test::RestGet(
      rest + "/api/maestro/v1/resource-bundles?search=source%3D%27" + kSource + "%27");
  ASSERT_EQ(listed.status, 200) << listed.body;
  nlohmann::json items = nlohmann::json::parse(listed.body)["items"];
  ASSERT_EQ(items.size(), 1U) << listed.body;
  EXPECT_EQ(items[0]["id"], resource_id);

  // Delete: Maestro marks the row deleting, sends the delete to the agent, and removes the row
  // once the agent reports Deleted=True, which it relays to us.
  ASSERT_TRUE(source.PublishAndWait(maestro_test::DeleteRequest(kCluster, name, resource_id)).ok());
  std::optional<Event> delete_spec =
      agent.specs().Await(Is(cloudevents::kSpecDeleteRequestType, resource_id), seconds(30));
  ASSERT_TRUE(delete_spec.has_value()) << "the delete never reached the agent";
  ASSERT_TRUE(agent.Answer(*delete_spec).ok());
  std::optional<Event> deleted = source.statuses.Await(
      [&](const Event& e) {
        return Is(cloudevents::kStatusUpdateRequestType, resource_id)(e) &&
               maestro_test::HasConditionTrue(e, "Deleted");
      },
      seconds(30));
  ASSERT_TRUE(deleted.has_value()) << "no Deleted=True status for " << resource_id;
  EXPECT_TRUE(testing::WaitFor(
      [&] {
        return maestro_test::RestGet(rest + "/api/maestro/v1/resource-bundles/" + resource_id)
                   .status == 404;
      },
      seconds(10)))
      << "the resource bundle is still listed after its deletion was confirmed";
}

TEST(MaestroServerTest, GrpcClientsComeBackAfterTheServerIsKilledAndStartedAgain) {
  MMI_START_PEER(pg, "postgres");
  std::vector<std::string> args = maestro_test::PeerArgs(*pg);
  args.push_back("BROKER=grpc");
  MMI_START_PEER(maestro, "maestro", args);
  const std::string rest = maestro->Get("MAESTRO_REST_URL");
  transport::MaestroConsumerRegistry consumers = maestro_test::Registry(rest);
  ASSERT_TRUE(consumers.EnsureConsumer(kCluster).ok());

  SourceClients source(SourceSettings(maestro->Get("MAESTRO_GRPC_ADDR")));
  ASSERT_TRUE(source.Start().ok());
  ASSERT_TRUE(testing::WaitFor(
      [&] { return source.publisher->connected() && source.subscriber->connected(); },
      seconds(20)));
  ASSERT_TRUE(source.PublishAndWait(maestro_test::CreateRequest(kCluster, "before")).ok());

  const auto t0 = std::chrono::steady_clock::now();
  testing::CommandResult restarted = testing::RunCommand(
      testing::PeersBinDir() + "/restart-maestro " + maestro->data_dir() + " SIGNAL=KILL");
  ASSERT_EQ(restarted.exit_code, 0) << restarted.output;

  // Nothing calls the clients: the publisher's watcher and the subscriber's re-subscribe loop
  // must find the new server on their own.
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        return source.publisher->connected() && source.subscriber->connected() &&
               source.Resubscriptions() >= 1;
      },
      seconds(30)))
      << "gRPC clients did not come back after the restart";
  const auto back = std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - t0);
  std::cout << "[ maestro ] restart (kill -9, start, ready) + clients back: " << back.count()
            << " ms\n";
  EXPECT_GE(transport::testing::MetricValue(source.registry, "mmi_transport_reconnects_total",
                                            {{"client", "publisher"}}),
            1.0);

  const std::string after = cloudevents::WorkResourceId(kSource, kCluster, "after");
  ASSERT_TRUE(source.PublishAndWait(maestro_test::CreateRequest(kCluster, "after")).ok());
  EXPECT_EQ(maestro_test::RestGet(rest + "/api/maestro/v1/resource-bundles/" + after).status, 200);
}

// Maestro serves an update with two of its database connections at once (an advisory-lock
// transaction, then a read of the row, pkg/services/resource.go), so with as many updates in
// flight as its pool holds (--db-max-open-connections, default 50) each holds one and waits for a
// second, and nothing moves until the calls' deadlines; a create whose deadline passes there then
// panics the server (handleCreateError with a nil error). Seen in the gRPC fault matrix: the
// dispatcher's outbox sent 256 at once after a restart. A burst of more updates than that pool,
// at most the publisher's max_in_flight() open at once (the outbox's bound), is committed
// within seconds. (With all 120 open at once, 114 and then 120 of them failed at the 10 s
// deadline, 2026-11-28.)
TEST(MaestroServerTest, ABurstOfUpdatesWithinThePublishersBoundIsCommittedWithinSeconds) {
  MMI_START_PEER(pg, "postgres");
  std::vector<std::string> args = maestro_test::PeerArgs(*pg);
  args.push_back("BROKER=grpc");
  MMI_START_PEER(maestro, "maestro", args);
  transport::MaestroConsumerRegistry consumers =
      maestro_test::Registry(maestro->Get("MAESTRO_REST_URL"));
  ASSERT_TRUE(consumers.EnsureConsumer(kCluster).ok());
  SourceClients source(SourceSettings(maestro->Get("MAESTRO_GRPC_ADDR")));
  ASSERT_TRUE(source.Start().ok());
  ASSERT_TRUE(testing::WaitFor([&] { return source.publisher->connected(); }, seconds(20)));
  const size_t window = source.publisher->max_in_flight();
  ASSERT_EQ(window, transport::GrpcSettings{}.max_in_flight);

  constexpr int kResources = 120;  // more than Maestro's pool of 50 connections
  const auto burst = [&](int round) {
    std::vector<Event> events;
    for (int i = 0; i < kResources; ++i) {
      events.push_back(maestro_test::SpecRequest(kCluster, "burst-" + std::to_string(i), round));
    }
    return PublishBurst(*source.publisher, std::move(events), window);
  };
  const BurstResult created = burst(1);
  ASSERT_EQ(created.failed, 0) << created.first_error;
  for (int round = 2; round <= 3; ++round) {
    const BurstResult updated = burst(round);
    std::cout << "[ maestro ] " << kResources << " updates (round " << round << "), " << window
              << " in flight: " << updated.total.count() << " ms, slowest call "
              << updated.slowest.count() << " ms\n";
    // A starved pool holds every call to it until the 10 s deadline fails it.
    EXPECT_EQ(updated.failed, 0) << updated.first_error;
  }
}

}  // namespace
}  // namespace mmi
