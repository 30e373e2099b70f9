// The gRPC broker agent transport against FakeAgentBroker (libs/transport/grpc/testing), a
// stand-in for the agent half of Maestro's gRPC broker (maestro-protocol.md §4.7) on a loopback
// TCP port: subscription per cluster, routing, heartbeats, publish outcomes, per-cluster
// re-subscription, and a fleet of 3,000 simulated clusters on one channel. Maestro itself cannot
// be built here (docs/adr/0002), so this is the protocol as the spec states it, not interop
// with Maestro's binary.
#include "tools/fleet-sim/grpc_broker_agent_transport.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "libs/cloudevents/grpc_codec.h"
#include "libs/common/clock.h"
#include "libs/transport/grpc/testing/fake_agent_broker.h"
#include "libs/transport/testing/test_events.h"
#include "prometheus/registry.h"
#include "tests/support/wait.h"
#include "tools/fleet-sim/agent_state.h"
#include "tools/fleet-sim/fleet.h"
#include "tools/fleet-sim/fleet_metrics.h"
#include "tools/fleet-sim/fleet_simulator.h"

namespace mmi::fleet_sim {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using transport::testing::FakeAgentBroker;
using transport::testing::FakeAgentBrokerSettings;

GrpcBrokerAgentSettings Settings(const std::string& url, std::vector<std::string> clusters) {
  GrpcBrokerAgentSettings settings;
  settings.grpc.url = url;
  settings.grpc.reconnect_backoff = {milliseconds(50), milliseconds(200), 2.0, 0.2};
  settings.grpc.publish_timeout = seconds(10);
  settings.clusters = std::move(clusters);
  return settings;
}

// What the transport handed to the simulator.
class Recorder {
 public:
  ReceiveHandler OnReceive() {
    return [this](ReceivedEvent received) {
      absl::MutexLock lock(&mu_);
      received_.push_back(std::move(received));
    };
  }
  SubscribedHandler OnSubscribed() {
    return [this](Subscription subscription) {
      absl::MutexLock lock(&mu_);
      subscriptions_.push_back(std::move(subscription));
    };
  }
  std::vector<ReceivedEvent> received() {
    absl::MutexLock lock(&mu_);
    return received_;
  }
  std::vector<Subscription> subscriptions() {
    absl::MutexLock lock(&mu_);
    return subscriptions_;
  }
  // Clusters named by subscriptions with this `reconnect` flag, sorted.
  std::vector<std::string> Clusters(bool reconnect) {
    absl::MutexLock lock(&mu_);
    std::vector<std::string> out;
    for (const Subscription& s : subscriptions_) {
      if (s.reconnect == reconnect) {
        out.insert(out.end(), s.clusters.begin(), s.clusters.end());
      }
    }
    std::sort(out.begin(), out.end());
    return out;
  }

 private:
  absl::Mutex mu_;
  std::vector<ReceivedEvent> received_ ABSL_GUARDED_BY(mu_);
  std::vector<Subscription> subscriptions_ ABSL_GUARDED_BY(mu_);
};

absl::Status PublishAndWait(GrpcBrokerAgentTransport& transport, cloudevents::Event event) {
  // Shared with the callback: it may still run after a timeout returned from here.
  struct Outcome {
    absl::Mutex mu;
    std::optional<absl::Status> status ABSL_GUARDED_BY(mu);
  };
  auto outcome = std::make_shared<Outcome>();
  transport.Publish(std::move(event), [outcome](absl::Status status) {
    absl::MutexLock lock(&outcome->mu);
    outcome->status = std::move(status);
  });
  absl::MutexLock lock(&outcome->mu);
  auto done = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(outcome->mu) {
    return outcome->status.has_value();
  };
  if (!outcome->mu.AwaitWithTimeout(absl::Condition(&done), absl::Seconds(15))) {
    return absl::DeadlineExceededError("publish did not complete");
  }
  return *outcome->status;
}

TEST(GrpcBrokerAgentSettingsTest, RejectsUnusableSettingsNamingTheField) {
  EXPECT_TRUE(ValidateGrpcBrokerAgentSettings(Settings("127.0.0.1:8091", {"c1"})).ok());
  auto message = [](const GrpcBrokerAgentSettings& s) {
    return std::string(ValidateGrpcBrokerAgentSettings(s).message());
  };
  EXPECT_NE(message(Settings("maestro-grpc-broker", {"c1"})).find("grpc.url"), std::string::npos);
  EXPECT_NE(message(Settings("127.0.0.1:8091", {})).find("clusters"), std::string::npos);
  EXPECT_NE(message(Settings("127.0.0.1:8091", {"c1", "c1"})).find("\"c1\" twice"),
            std::string::npos);
  GrpcBrokerAgentSettings pings = Settings("127.0.0.1:8091", {"c1"});
  pings.grpc.keep_alive_time = seconds(1);
  EXPECT_NE(message(pings).find("grpc.keepAliveTime"), std::string::npos);
  GrpcBrokerAgentSettings type = Settings("127.0.0.1:8091", {"c1"});
  type.grpc.data_type = "manifestbundles";
  EXPECT_NE(message(type).find("grpc.dataType"), std::string::npos);
}

TEST(GrpcBrokerAgentTransportTest, SubscribesEachClusterAndRoutesItsSpecEvents) {
  FakeAgentBroker broker(FakeAgentBrokerSettings{milliseconds(50)});
  ASSERT_TRUE(broker.Start().ok());
  Recorder recorder;  // declared first: outlives the transport's threads
  GrpcBrokerAgentTransport transport(Settings(broker.address(), {"c1", "c2", "c3"}));
  ASSERT_TRUE(transport.Start(recorder.OnReceive(), recorder.OnSubscribed()).ok());
  ASSERT_TRUE(testing::WaitFor([&] { return transport.connected(); }, seconds(10)))
      << transport.subscribed_streams() << " of 3 streams subscribed";
  EXPECT_EQ(broker.subscribed_clusters(), (std::vector<std::string>{"c1", "c2", "c3"}));
  ASSERT_TRUE(testing::WaitFor([&] { return recorder.Clusters(false).size() == 3; }, seconds(5)));
  EXPECT_EQ(recorder.Clusters(false), (std::vector<std::string>{"c1", "c2", "c3"}));
  EXPECT_TRUE(recorder.Clusters(true).empty());

  const cloudevents::Event spec = transport::testing::MakeSpecEvent("maestro", "c2", 7);
  absl::StatusOr<io::cloudevents::v1::CloudEvent> wire = cloudevents::EncodeGrpc(spec);
  ASSERT_TRUE(wire.ok());
  ASSERT_EQ(broker.SendToCluster("c2", *wire), 1);
  ASSERT_TRUE(testing::WaitFor([&] { return !recorder.received().empty(); }, seconds(5)));
  // Heartbeats flow on every stream but only count as activity.
  ASSERT_TRUE(testing::WaitFor([&] { return transport.heartbeats() >= 6; }, seconds(5)));
  const std::vector<ReceivedEvent> received = recorder.received();
  ASSERT_EQ(received.size(), 1u);
  EXPECT_EQ(received[0].topic_cluster, "c2");
  ASSERT_TRUE(received[0].event.ok()) << received[0].event.status();
  EXPECT_EQ(*received[0].event, spec);
  transport.Stop();
  EXPECT_FALSE(transport.connected());
}

TEST(GrpcBrokerAgentTransportTest, PublishesAgentEventsAndReportsTheBrokersRefusals) {
  FakeAgentBroker broker;
  ASSERT_TRUE(broker.Start().ok());
  Recorder recorder;  // declared first: outlives the transport's threads
  GrpcBrokerAgentTransport transport(Settings(broker.address(), {"c1"}));
  ASSERT_TRUE(transport.Start(recorder.OnReceive(), recorder.OnSubscribed()).ok());
  ASSERT_TRUE(testing::WaitFor([&] { return transport.connected(); }, seconds(10)));

  // A status for a spec Maestro sent (originalsource maestro) is taken.
  const cloudevents::Event status = transport::testing::MakeStatusEvent("maestro", "c1", 1);
  EXPECT_TRUE(PublishAndWait(transport, status).ok());
  ASSERT_EQ(broker.published_count(), 1);
  EXPECT_EQ(broker.published()[0], status);

  // The broker refuses a status for another source: FAILED_PRECONDITION.
  EXPECT_EQ(PublishAndWait(transport, transport::testing::MakeStatusEvent("other", "c1", 2)).code(),
            absl::StatusCode::kFailedPrecondition);
  // A spec event is not the agent's to send: INVALID_ARGUMENT.
  EXPECT_EQ(PublishAndWait(transport, transport::testing::MakeSpecEvent("maestro", "c1", 3)).code(),
            absl::StatusCode::kInvalidArgument);
  // An event without a cluster cannot be routed: refused before the wire.
  cloudevents::Event unrouted = status;
  unrouted.RemoveExtension(cloudevents::kExtClusterName);
  EXPECT_EQ(PublishAndWait(transport, unrouted).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(broker.publishes_refused(), 2);
  // A broker failure is retryable.
  broker.FailNextPublishes(1);
  EXPECT_EQ(PublishAndWait(transport, status).code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(PublishAndWait(transport, status).ok());
  EXPECT_EQ(broker.published_count(), 2);

  transport.Stop();
  EXPECT_EQ(PublishAndWait(transport, status).code(), absl::StatusCode::kUnavailable);
}

TEST(GrpcBrokerAgentTransportTest, AnEndedStreamIsReopenedForItsClusterAlone) {
  FakeAgentBroker broker;
  ASSERT_TRUE(broker.Start().ok());
  Recorder recorder;  // declared first: outlives the transport's threads
  GrpcBrokerAgentTransport transport(Settings(broker.address(), {"c1", "c2", "c3"}));
  ASSERT_TRUE(transport.Start(recorder.OnReceive(), recorder.OnSubscribed()).ok());
  ASSERT_TRUE(testing::WaitFor([&] { return transport.connected(); }, seconds(10)));
  ASSERT_EQ(broker.subscribes_accepted(), 3);

  broker.EndStreams("c2", grpc::Status(grpc::StatusCode::UNAVAILABLE, "replica going away"));
  ASSERT_TRUE(testing::WaitFor([&] { return !recorder.Clusters(true).empty(); }, seconds(10)));
  ASSERT_TRUE(testing::WaitFor([&] { return transport.connected(); }, seconds(10)));
  EXPECT_EQ(recorder.Clusters(true), std::vector<std::string>{"c2"});
  EXPECT_EQ(broker.subscribes_accepted(), 4);
  EXPECT_EQ(broker.open_streams(), 3);
}

TEST(GrpcBrokerAgentTransportTest, AStreamWithoutSubscriptionIdIsNotSubscribed) {
  FakeAgentBroker broker;
  broker.SetSendSubscriptionId(false);
  ASSERT_TRUE(broker.Start().ok());
  Recorder recorder;  // declared first: outlives the transport's threads
  GrpcBrokerAgentTransport transport(Settings(broker.address(), {"c1"}));
  ASSERT_TRUE(transport.Start(recorder.OnReceive(), recorder.OnSubscribed()).ok());
  // The agent gives up on each such stream and tries again after its backoff.
  ASSERT_TRUE(testing::WaitFor([&] { return broker.subscribes_accepted() >= 3; }, seconds(10)));
  EXPECT_FALSE(transport.connected());
  EXPECT_TRUE(recorder.subscriptions().empty());

  broker.SetSendSubscriptionId(true);
  ASSERT_TRUE(testing::WaitFor([&] { return transport.connected(); }, seconds(10)));
  // Subscriptions are handed out in batches (every 100 ms).
  ASSERT_TRUE(testing::WaitFor([&] { return !recorder.subscriptions().empty(); }, seconds(5)));
  EXPECT_EQ(recorder.Clusters(false), std::vector<std::string>{"c1"});
}

TEST(GrpcBrokerAgentTransportTest, TheBrokerRefusesASubscriptionWithoutClusterName) {
  FakeAgentBroker broker;
  ASSERT_TRUE(broker.Start().ok());
  auto channel = grpc::CreateChannel(broker.address(), grpc::InsecureChannelCredentials());
  auto stub = io::cloudevents::v1::CloudEventService::NewStub(channel);
  grpc::ClientContext context;
  io::cloudevents::v1::SubscriptionRequest request;
  request.set_data_type(std::string(cloudevents::kManifestBundlesDataType));
  auto reader = stub->Subscribe(&context, request);
  io::cloudevents::v1::CloudEvent message;
  EXPECT_FALSE(reader->Read(&message));
  const grpc::Status status = reader->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message(), "missing cluster name");
  EXPECT_EQ(broker.subscribes_refused(), 1);
}

// Thousands of clusters per process: 3,000 Subscribe streams on one channel, a spec resync
// request from each cluster once subscribed, one work per cluster answered with its status, and
// after every stream ended (a broker restart) each cluster re-subscribes and resyncs again.
TEST(GrpcBrokerAgentTransportTest, AFailedPublishIsRetriedWhileAnotherClustersStreamIsDown) {
  FakeAgentBroker broker;
  ASSERT_TRUE(broker.Start().ok());
  SimulatorSettings sim;
  sim.fleet.clusters = 2;
  sim.fleet.cluster_prefix = "cluster-";
  sim.fleet.cluster_digits = 1;
  sim.fleet.agent.refresh_max = seconds(0);  // no churn: the only status is the one below
  sim.tick = milliseconds(100);
  const std::vector<std::string> names = {ClusterName("cluster-", 1, 1),
                                          ClusterName("cluster-", 2, 1)};
  GrpcBrokerAgentTransport transport(Settings(broker.address(), names));
  prometheus::Registry registry;
  FleetMetrics metrics(registry);
  FleetSimulator simulator(sim, transport, RealClock::Instance(), metrics);
  ASSERT_TRUE(simulator.Start().ok());
  ASSERT_TRUE(testing::WaitFor([&] { return transport.connected(); }, seconds(10)));
  ASSERT_TRUE(testing::WaitFor([&] { return broker.published_count() >= 2; }, seconds(10)))
      << "one spec resync request per cluster";

  // The second cluster's stream ends and cannot subscribe again (no subscription-id).
  broker.SetSendSubscriptionId(false);
  broker.EndStreams(names[1], grpc::Status(grpc::StatusCode::UNAVAILABLE, "going away"));
  ASSERT_TRUE(testing::WaitFor([&] { return !transport.connected(); }, seconds(10)));

  // The first cluster's status is refused once by the broker, then retried over the channel.
  broker.FailNextPublishes(1);
  const int before = broker.published_count();
  absl::StatusOr<io::cloudevents::v1::CloudEvent> wire =
      cloudevents::EncodeGrpc(transport::testing::MakeSpecEvent("maestro", names[0], 1));
  ASSERT_TRUE(wire.ok());
  ASSERT_EQ(broker.SendToCluster(names[0], *wire), 1);
  ASSERT_TRUE(testing::WaitFor([&] { return broker.published_count() > before; }, seconds(10)))
      << "the failed status was not retried while another cluster was unsubscribed";
  const cloudevents::Event status = broker.published().back();
  EXPECT_EQ(status.type, cloudevents::kStatusUpdateRequestType);
  EXPECT_EQ(status.ClusterName().value_or(""), names[0]);
  EXPECT_FALSE(transport.connected()) << "retried while the second stream was still down";
  simulator.Stop();
}

TEST(GrpcBrokerAgentTransportTest, AFleetOfThreeThousandClustersOnOneChannel) {
  constexpr int kClusters = 3000;
  FakeAgentBroker broker(FakeAgentBrokerSettings{seconds(1)});
  ASSERT_TRUE(broker.Start().ok());
  SimulatorSettings sim;
  sim.fleet.clusters = kClusters;
  sim.fleet.cluster_prefix = "cluster-";
  sim.fleet.cluster_digits = 4;
  sim.fleet.agent.refresh_max = seconds(0);  // no churn: count exactly
  sim.tick = milliseconds(100);
  std::vector<std::string> names;
  for (int i = 1; i <= kClusters; ++i) {
    names.push_back(ClusterName(sim.fleet.cluster_prefix, i, sim.fleet.cluster_digits));
  }
  GrpcBrokerAgentTransport transport(Settings(broker.address(), names));
  prometheus::Registry registry;
  FleetMetrics metrics(registry);
  FleetSimulator simulator(sim, transport, RealClock::Instance(), metrics);
  ASSERT_TRUE(simulator.Start().ok());
  ASSERT_TRUE(testing::WaitFor([&] { return transport.connected(); }, seconds(60)))
      << transport.subscribed_streams() << " streams subscribed";

  auto count = [&](std::string_view type) {
    int n = 0;
    std::set<std::string> clusters;
    for (const cloudevents::Event& e : broker.published()) {
      if (e.type == type) {
        ++n;
        clusters.insert(*e.ClusterName());
      }
    }
    EXPECT_EQ(static_cast<int>(clusters.size()), n) << "one per cluster for " << type;
    return n;
  };
  ASSERT_TRUE(testing::WaitFor([&] { return broker.published_count() >= kClusters; }, seconds(60)));
  EXPECT_EQ(count(cloudevents::kSpecResyncRequestType), kClusters);

  for (int i = 0; i < kClusters; ++i) {
    absl::StatusOr<io::cloudevents::v1::CloudEvent> wire =
        cloudevents::EncodeGrpc(transport::testing::MakeSpecEvent("maestro", names[i], i + 1));
    ASSERT_TRUE(wire.ok());
    ASSERT_EQ(broker.SendToCluster(names[i], *wire), 1);
  }
  ASSERT_TRUE(
      testing::WaitFor([&] { return broker.published_count() >= 2 * kClusters; }, seconds(120)))
      << broker.published_count() << " published";
  EXPECT_EQ(count(cloudevents::kStatusUpdateRequestType), kClusters);
  EXPECT_EQ(simulator.application_count(), static_cast<std::size_t>(kClusters));
  EXPECT_EQ(broker.publishes_refused(), 0);

  // A broker restart ends every stream; each cluster comes back and resyncs.
  broker.EndStreams("", grpc::Status(grpc::StatusCode::UNAVAILABLE, "broker restarting"));
  ASSERT_TRUE(
      testing::WaitFor([&] { return broker.published_count() >= 3 * kClusters; }, seconds(120)))
      << broker.published_count() << " published";
  ASSERT_TRUE(testing::WaitFor([&] { return transport.connected(); }, seconds(60)));
  int resyncs = 0;
  for (const cloudevents::Event& e : broker.published()) {
    resyncs += e.type == cloudevents::kSpecResyncRequestType ? 1 : 0;
  }
  EXPECT_EQ(resyncs, 2 * kClusters);
  EXPECT_EQ(broker.subscribes_accepted(), 2 * kClusters);
  simulator.Stop();
}

}  // namespace
}  // namespace mmi::fleet_sim
