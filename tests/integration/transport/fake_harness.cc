// The contract suite against the in-memory fakes (FakePublisher / FakeSubscriber): the test plays
// the broker. Structured JSON is the fake's wire format for malformed/oversize input.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "libs/transport/testing/fake_publisher.h"
#include "libs/transport/testing/fake_subscriber.h"
#include "tests/integration/transport/contract_harness.h"

namespace mmi::transport::contract {
namespace {

constexpr std::size_t kLimit = 64 * 1024;

// What survives a "service restart" in the fake broker: unacknowledged events, like a Kafka
// consumer group's uncommitted offsets.
struct FakeBrokerState {
  std::vector<cloudevents::Event> unacked;
  std::vector<cloudevents::Event> accepted;  // by publishers that are gone
};

// A FakeSubscriber that, when started, first redelivers what its predecessor left unacked.
class RedeliveringSubscriber final : public Subscriber {
 public:
  RedeliveringSubscriber(std::shared_ptr<FakeBrokerState> broker, prometheus::Registry& registry)
      : broker_(std::move(broker)),
        inner_(registry, cloudevents::CodecLimits{.max_event_bytes = kLimit}) {}
  ~RedeliveringSubscriber() override { broker_->unacked = inner_.unacked_events(); }

  absl::Status Start(EventHandler handler, SubscribedHook on_subscribed) override {
    absl::Status status = inner_.Start(std::move(handler), std::move(on_subscribed));
    std::vector<cloudevents::Event> pending;
    pending.swap(broker_->unacked);
    for (cloudevents::Event& event : pending) {
      EXPECT_TRUE(inner_.Deliver(std::move(event)).ok());
    }
    return status;
  }
  void Stop() override { inner_.Stop(); }
  bool connected() const override { return inner_.connected(); }
  testing::FakeSubscriber& inner() { return inner_; }

 private:
  std::shared_ptr<FakeBrokerState> broker_;
  testing::FakeSubscriber inner_;
};

// Hands accepted events to the broker state when it goes away.
class RecordingPublisher final : public Publisher {
 public:
  RecordingPublisher(std::shared_ptr<FakeBrokerState> broker, prometheus::Registry& registry)
      : broker_(std::move(broker)), inner_(testing::FakePublisher::Mode::kImmediate, registry) {}
  ~RecordingPublisher() override {
    for (cloudevents::Event& event : inner_.accepted()) {
      broker_->accepted.push_back(std::move(event));
    }
  }
  absl::Status Start() override { return inner_.Start(); }
  void Publish(cloudevents::Event event, PublishCallback done) override {
    inner_.Publish(std::move(event), std::move(done));
  }
  void Stop() override { inner_.Stop(); }
  bool connected() const override { return inner_.connected(); }
  testing::FakePublisher& inner() { return inner_; }

 private:
  std::shared_ptr<FakeBrokerState> broker_;
  testing::FakePublisher inner_;
};

class FakeHarness final : public Harness {
 public:
  std::string name() const override { return "fake"; }
  void SetUp(const std::string& /*source_id*/) override {}

  TransportClients MakeClients(Clock& /*clock*/, prometheus::Registry& registry) override {
    auto publisher = std::make_unique<RecordingPublisher>(broker_, registry);
    auto subscriber = std::make_unique<RedeliveringSubscriber>(broker_, registry);
    publisher_ = publisher.get();
    subscriber_ = subscriber.get();
    return TransportClients{std::move(publisher), std::move(subscriber)};
  }

  // The latest clients must still exist when these run (the suite keeps them alive).
  void AgentSend(const cloudevents::Event& event) override {
    auto id = subscriber_->inner().Deliver(event);
    ASSERT_TRUE(id.ok()) << id.status();
  }
  void AgentSendMalformed() override {
    EXPECT_FALSE(subscriber_->inner().DeliverEncoded(R"({"specversion":"1.0","id":)").ok());
  }
  void AgentSendOversize() override {
    EXPECT_FALSE(subscriber_->inner().DeliverEncoded(std::string(kLimit + 1, ' ')).ok());
  }
  std::vector<cloudevents::Event> AgentReceived() override {
    std::vector<cloudevents::Event> all = broker_->accepted;
    for (cloudevents::Event& e : publisher_->inner().accepted()) {
      all.push_back(std::move(e));
    }
    return all;
  }
  void RestartBroker() override {
    publisher_->inner().SetConnected(false);
    subscriber_->inner().SimulateDisconnect();
    publisher_->inner().SetConnected(true);
    subscriber_->inner().SimulateReconnect();
  }
  bool RedeliversUnacked() const override { return true; }
  bool CountsReconnects() const override { return false; }

 private:
  // Shared with the clients, which outlive neither the harness nor each other in order.
  std::shared_ptr<FakeBrokerState> broker_ = std::make_shared<FakeBrokerState>();
  RecordingPublisher* publisher_ = nullptr;
  RedeliveringSubscriber* subscriber_ = nullptr;
};

}  // namespace

std::unique_ptr<Harness> MakeFakeHarness() { return std::make_unique<FakeHarness>(); }

}  // namespace mmi::transport::contract
