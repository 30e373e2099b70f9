// Broker-free checks of MqttPublisher / MqttSubscriber; the broker behaviour is covered by the
// contract suite in tests/integration/transport against a real mosquitto.
#include "libs/transport/mqtt/mqtt_publisher.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <future>

#include "libs/common/testing/fake_clock.h"
#include "libs/transport/mqtt/mqtt_subscriber.h"

namespace mmi::transport {
namespace {

using ::testing::HasSubstr;

MqttSettings Settings() {
  MqttSettings s;
  s.broker_host = "127.0.0.1:1883";
  s.source_id = "mmi";
  return s;
}

cloudevents::Event SpecEvent() {
  cloudevents::Event event;
  event.id = "e1";
  event.source = "mmi";
  event.type = std::string(cloudevents::kSpecCreateRequestType);
  event.SetString(cloudevents::kExtClusterName, "cluster1");
  return event;
}

absl::Status PublishAndWait(Publisher& publisher, cloudevents::Event event) {
  std::promise<absl::Status> result;
  publisher.Publish(std::move(event), [&result](absl::Status s) { result.set_value(s); });
  return result.get_future().get();
}

TEST(MqttPublisherTest, PublishBeforeStartFailsWithFailedPrecondition) {
  mmi::testing::FakeClock clock;
  prometheus::Registry registry;
  MqttPublisher publisher(Settings(), clock, registry);
  EXPECT_EQ(PublishAndWait(publisher, SpecEvent()).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(publisher.connected());
  publisher.Stop();
  publisher.Stop();
}

TEST(MqttPublisherTest, StartFailsWhenATlsFileIsMissing) {
  mmi::testing::FakeClock clock;
  prometheus::Registry registry;
  MqttSettings s = Settings();
  s.tls.enabled = true;
  s.tls.ca_file = "/nonexistent/ca.crt";
  MqttPublisher publisher(s, clock, registry);
  const absl::Status status = publisher.Start();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(status.message()), HasSubstr("transport.mqtt.tls.caFile"));
}

TEST(MqttPublisherTest, StartFailsOnInvalidSettings) {
  mmi::testing::FakeClock clock;
  prometheus::Registry registry;
  MqttSettings s = Settings();
  s.source_id = "Not_Valid";
  MqttPublisher publisher(s, clock, registry);
  EXPECT_EQ(publisher.Start().code(), absl::StatusCode::kInvalidArgument);
}

TEST(MqttSubscriberTest, StartRequiresAHandler) {
  prometheus::Registry registry;
  MqttSubscriber subscriber(Settings(), registry);
  EXPECT_EQ(subscriber.Start(nullptr, nullptr).code(), absl::StatusCode::kInvalidArgument);
  subscriber.Stop();
}

}  // namespace
}  // namespace mmi::transport
