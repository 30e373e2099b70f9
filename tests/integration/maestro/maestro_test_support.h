// What the tests against the real Maestro server share (maestro_smoke_test, maestro_auth_test):
// the project's gRPC source clients on one channel, an inbox of received events, cluster1's work
// agent played by fleet-sim's agent code on Maestro's MQTT topics, and the events they exchange.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "libs/cloudevents/event.h"
#include "libs/common/clock.h"
#include "libs/transport/grpc/grpc_publisher.h"
#include "libs/transport/grpc/grpc_subscriber.h"
#include "libs/transport/grpc/maestro_consumer_registry.h"
#include "prometheus/registry.h"
#include "tests/support/http.h"
#include "tests/support/peer.h"
#include "tools/fleet-sim/agent_state.h"
#include "tools/fleet-sim/mqtt_agent_transport.h"

namespace mmi::maestro_test {

inline constexpr char kSource[] = "mmi-smoke";  // our source id on Maestro's gRPC source API
inline constexpr char kCluster[] = "cluster1";

// Events received on some transport thread, waited for on the test thread.
class Inbox {
 public:
  void Add(cloudevents::Event event);
  // The first event received so far for which `match` holds, waiting up to `timeout`.
  std::optional<cloudevents::Event> Await(
      const std::function<bool(const cloudevents::Event&)>& match,
      std::chrono::milliseconds timeout);

 private:
  absl::Mutex mu_;
  std::vector<cloudevents::Event> events_ ABSL_GUARDED_BY(mu_);
};

std::function<bool(const cloudevents::Event&)> Is(std::string_view type,
                                                  const std::string& resource_id);
bool HasConditionTrue(const cloudevents::Event& status, std::string_view type);
std::string WorkMeta(const std::string& cluster, const std::string& name,
                     const std::string& resource_id, int version,
                     std::optional<cloudevents::Timestamp> deletion);
// Round 1 creates a ConfigMap work (version 1); a later round updates it with other data and
// version 0, as the dispatcher sends updates to Maestro (which then applies its latest version).
cloudevents::Event SpecRequest(const std::string& cluster, const std::string& name, int round);
cloudevents::Event CreateRequest(const std::string& cluster, const std::string& name);
// The dispatcher's delete request for the work `name` (version 1), deletion time now.
cloudevents::Event DeleteRequest(const std::string& cluster, const std::string& name,
                                 const std::string& resource_id);

// Settings for our source on `grpc_addr`, with fast re-subscribes so a restarted server is found
// again within seconds.
transport::GrpcSettings SourceSettings(const std::string& grpc_addr);

// The project's gRPC source clients on one channel, as transport::MakeClients builds them.
struct SourceClients {
  explicit SourceClients(const transport::GrpcSettings& grpc_settings);
  ~SourceClients();
  absl::Status Start();
  absl::Status PublishAndWait(cloudevents::Event event);
  int Resubscriptions();

  transport::GrpcSettings settings;
  RealClock& clock = RealClock::Instance();
  prometheus::Registry registry;
  std::unique_ptr<transport::GrpcPublisher> publisher;
  std::unique_ptr<transport::GrpcSubscriber> subscriber;
  Inbox statuses;
  absl::Mutex mu;
  int subscriptions ABSL_GUARDED_BY(mu) = 0;
  int resubscriptions ABSL_GUARDED_BY(mu) = 0;
};

// cluster1's work agent on Maestro's MQTT topics (source id = Maestro's), with no refresh churn:
// it only answers the specs it is given.
class MqttClusterAgent {
 public:
  MqttClusterAgent(const std::string& broker_host, const std::string& maestro_source_id);
  ~MqttClusterAgent() { transport_.Stop(); }
  // Subscribes and waits until connected.
  absl::Status Start();
  // Applies `spec` and publishes the agent's replies, waiting for each PUBACK.
  absl::Status Answer(const cloudevents::Event& spec);
  Inbox& specs() { return specs_; }

 private:
  cloudevents::SequenceIdGenerator sequence_ids_;
  fleet_sim::ClusterAgent agent_;
  fleet_sim::MqttAgentTransport transport_;
  Inbox specs_;
};

testing::HttpResponse RestGet(const std::string& url);
// The sum of the samples of counter `name` in Maestro's /metrics at `url` whose labels include
// every `labels` pair; 0 when none matches, nullopt when the scrape fails.
std::optional<double> ScrapeCounter(const std::string& url, const std::string& name,
                                    const std::vector<std::pair<std::string, std::string>>& labels);
transport::MaestroConsumerRegistry Registry(const std::string& rest);
// start-maestro's PostgreSQL arguments for `pg`.
std::vector<std::string> PeerArgs(const testing::PeerProcess& pg);

}  // namespace mmi::maestro_test
