#include "libs/transport/factory.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "libs/common/testing/fake_clock.h"

namespace mmi::transport {
namespace {

using ::testing::HasSubstr;

class FactoryTest : public ::testing::Test {
 protected:
  mmi::testing::FakeClock clock_;
  prometheus::Registry registry_;
  TransportDeps deps_{clock_, registry_};
};

TEST_F(FactoryTest, RejectsInvalidSettingsWithTheFieldPath) {
  MqttSettings mqtt;
  mqtt.source_id = "mmi";
  auto publisher = MakePublisher(TransportSettings(mqtt), deps_);
  ASSERT_FALSE(publisher.ok());
  EXPECT_EQ(publisher.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(publisher.status().message()), HasSubstr("transport.mqtt.brokerHost"));
}

TEST_F(FactoryTest, BuildsUnstartedClientsForEveryCompiledInTransport) {
  MqttSettings mqtt;
  mqtt.broker_host = "127.0.0.1:1883";
  mqtt.source_id = "mmi";
  GrpcSettings grpc;
  grpc.url = "127.0.0.1:8090";
  grpc.source_id = "mmi";
  KafkaSettings kafka;
  kafka.bootstrap_servers = "127.0.0.1:9092";
  kafka.source_id = "mmi";
  for (const TransportSettings& settings :
       {TransportSettings(mqtt), TransportSettings(grpc), TransportSettings(kafka)}) {
    auto clients = MakeClients(settings, deps_);
    if (!clients.ok()) {
      // Only a transport compiled out may fail here, and it must say so.
      EXPECT_EQ(clients.status().code(), absl::StatusCode::kFailedPrecondition);
      EXPECT_THAT(std::string(clients.status().message()), HasSubstr("=OFF"));
      continue;
    }
    ASSERT_NE(clients->publisher, nullptr) << TransportName(settings);
    ASSERT_NE(clients->subscriber, nullptr) << TransportName(settings);
    EXPECT_FALSE(clients->publisher->connected());
    EXPECT_FALSE(clients->subscriber->connected());
  }
}

TEST_F(FactoryTest, MakesOnlyTheRequestedDirection) {
  MqttSettings mqtt;
  mqtt.broker_host = "127.0.0.1:1883";
  mqtt.source_id = "mmi";
  auto publisher = MakePublisher(TransportSettings(mqtt), deps_);
  auto subscriber = MakeSubscriber(TransportSettings(mqtt), deps_);
  ASSERT_EQ(publisher.ok(), subscriber.ok());
  if (publisher.ok()) {
    EXPECT_NE(*publisher, nullptr);
    EXPECT_NE(*subscriber, nullptr);
  }
}

}  // namespace
}  // namespace mmi::transport
