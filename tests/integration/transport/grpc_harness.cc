// The contract suite for the gRPC transport. There is NO real Maestro on this machine (its Go
// module cannot be fetched here, see tests/peers/maestro/README.md), so the "broker" is the
// FakeCloudEventService test double serving on a loopback TCP port: it plays Maestro's protocol
// (§4), not Maestro's behaviour. "Agent events" are status events the double streams on
// Subscribe; what the source publishes is read back from the double's Publish log; a "broker
// restart" shuts the server down (streams end, connections close) and serves again on the same
// port, as a restarted Maestro does, so the clients' real channel has to reconnect.
#include <gtest/gtest.h>

#include <memory>

#include "libs/cloudevents/grpc_codec.h"
#include "libs/transport/grpc/grpc_channel.h"
#include "libs/transport/grpc/grpc_publisher.h"
#include "libs/transport/grpc/grpc_subscriber.h"
#include "libs/transport/grpc/testing/fake_cloud_event_service.h"
#include "tests/integration/transport/contract_harness.h"

namespace mmi::transport::contract {
namespace {

class GrpcHarness final : public Harness {
 public:
  std::string name() const override { return "grpc"; }

  void SetUp(const std::string& source_id) override {
    settings_.url = service_.address();
    settings_.source_id = source_id;
    settings_.reconnect_backoff = {std::chrono::milliseconds(10), std::chrono::milliseconds(200),
                                   2.0, 0.2};
    settings_.max_receive_bytes = std::size_t{4} * 1024 * 1024;
  }

  TransportClients MakeClients(Clock& clock, prometheus::Registry& registry) override {
    // One channel for both directions, as the factory does.
    absl::StatusOr<std::shared_ptr<grpc::Channel>> channel = MakeGrpcChannel(settings_);
    EXPECT_TRUE(channel.ok()) << channel.status();
    TransportClients clients;
    clients.publisher = std::make_unique<GrpcPublisher>(settings_, *channel, clock, registry);
    clients.subscriber = std::make_unique<GrpcSubscriber>(settings_, *channel, clock, registry);
    return clients;
  }

  void AgentSend(const cloudevents::Event& event) override {
    auto encoded = cloudevents::EncodeGrpc(event);
    ASSERT_TRUE(encoded.ok()) << encoded.status();
    service_.Send(*encoded);
  }
  void AgentSendMalformed() override {
    io::cloudevents::v1::CloudEvent malformed;  // non-heartbeat type, no attributes (§8.3)
    malformed.set_id("malformed");
    malformed.set_spec_version("1.0");
    malformed.set_type(std::string(cloudevents::kStatusUpdateRequestType));
    service_.Send(malformed);
  }
  void AgentSendOversize() override {
    io::cloudevents::v1::CloudEvent big;
    big.set_id("oversize");
    big.set_spec_version("1.0");
    big.set_type(std::string(cloudevents::kStatusUpdateRequestType));
    (*big.mutable_attributes())["ce-clustername"].set_ce_string("cluster1");
    big.set_binary_data(std::string(settings_.max_receive_bytes + 1024, 'x'));
    service_.Send(big);
  }
  std::vector<cloudevents::Event> AgentReceived() override {
    std::vector<cloudevents::Event> events;
    for (const auto& call : service_.publishes()) {
      auto event = cloudevents::DecodeGrpc(call.event);
      EXPECT_TRUE(event.ok()) << event.status();
      if (event.ok()) {
        events.push_back(*std::move(event));
      }
    }
    return events;
  }
  void RestartBroker() override {
    service_.StopServing();
    service_.StartServing();
  }
  bool RedeliversUnacked() const override { return false; }
  bool PipelinedPublishKeepsOrder() const override { return false; }
  // Maestro has no flow control of its own: the publisher bounds its open calls itself.
  size_t PublisherMaxInFlight() const override { return settings_.max_in_flight; }

 private:
  GrpcSettings settings_;
  testing::FakeCloudEventService service_{testing::FakeCloudEventService::Listen::kLoopbackTcp};
};

}  // namespace

std::unique_ptr<Harness> MakeGrpcHarness() { return std::make_unique<GrpcHarness>(); }

}  // namespace mmi::transport::contract
