// Broker-free checks of the MQTT publisher (libmosquitto) and subscriber (our own), made by the
// factory as the services make them; the broker behaviour is covered by the contract suite in
// tests/integration/transport against a real mosquitto.

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "libs/common/testing/fake_clock.h"
#include "libs/transport/factory.h"
#include "libs/transport/mqtt/native_mqtt_publisher.h"
#include "libs/transport/mqtt/native_mqtt_subscriber.h"

namespace mmi::transport {
namespace {

using ::testing::HasSubstr;

class MqttClientsTest : public ::testing::Test {
 protected:
  MqttSettings Settings() const {
    MqttSettings s;
    s.broker_host = "127.0.0.1:1883";
    s.source_id = "mmi";
    return s;
  }
  TransportClients Make(const MqttSettings& s) {
    auto clients = MakeClients(TransportSettings(s), TransportDeps{clock_, registry_});
    EXPECT_TRUE(clients.ok()) << clients.status();
    return clients.ok() ? *std::move(clients) : TransportClients{};
  }

  mmi::testing::FakeClock clock_;
  prometheus::Registry registry_;
};

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

TEST_F(MqttClientsTest, PublishBeforeStartFailsWithFailedPrecondition) {
  TransportClients clients = Make(Settings());
  ASSERT_NE(clients.publisher, nullptr);
  EXPECT_EQ(PublishAndWait(*clients.publisher, SpecEvent()).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(clients.publisher->connected());
  clients.publisher->Stop();
  clients.publisher->Stop();
}

TEST_F(MqttClientsTest, StartFailsWhenATlsFileIsMissing) {
  MqttSettings s = Settings();
  s.tls.enabled = true;
  s.tls.ca_file = "/nonexistent/ca.crt";
  TransportClients clients = Make(s);
  ASSERT_NE(clients.publisher, nullptr);
  const absl::Status status = clients.publisher->Start();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(status.message()), HasSubstr("transport.mqtt.tls.caFile"));
  const absl::Status sub = clients.subscriber->Start([](cloudevents::Event, AckFn) {}, nullptr);
  EXPECT_EQ(sub.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(sub.message()), HasSubstr("transport.mqtt.tls.caFile"));
  clients.subscriber->Stop();
}

TEST_F(MqttClientsTest, StartFailsOnInvalidSettings) {
  MqttSettings s = Settings();
  s.source_id = "Not_Valid";  // the factory refuses it too; Start() checks on its own
  auto publisher = std::make_unique<NativeMqttPublisher>(s, clock_, registry_);
  auto subscriber = std::make_unique<NativeMqttSubscriber>(s, registry_);
  EXPECT_EQ(publisher->Start().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(subscriber->Start([](cloudevents::Event, AckFn) {}, nullptr).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(MqttClientsTest, SubscriberStartRequiresAHandler) {
  TransportClients clients = Make(Settings());
  ASSERT_NE(clients.subscriber, nullptr);
  EXPECT_EQ(clients.subscriber->Start(nullptr, nullptr).code(), absl::StatusCode::kInvalidArgument);
  clients.subscriber->Stop();
}

TEST_F(MqttClientsTest, AnUnreachableBrokerIsNotAStartError) {
  MqttSettings s = Settings();
  s.broker_host = "127.0.0.1:1";  // nothing listens: connects fail and are retried
  TransportClients clients = Make(s);
  ASSERT_NE(clients.publisher, nullptr);
  EXPECT_TRUE(clients.publisher->Start().ok());
  EXPECT_TRUE(clients.subscriber->Start([](cloudevents::Event, AckFn) {}, nullptr).ok());
  EXPECT_FALSE(clients.subscriber->connected());
  EXPECT_EQ(PublishAndWait(*clients.publisher, SpecEvent()).code(), absl::StatusCode::kUnavailable);
  clients.subscriber->Stop();
  clients.publisher->Stop();
}

// A listener whose accept queue is full drops further SYNs: a connect to it hangs, as to a
// black-holed broker, until the kernel gives up (minutes). Stop() must not wait for that.
TEST_F(MqttClientsTest, StopDoesNotWaitForAConnectThatHangs) {
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(::listen(listener, 0), 0);
  socklen_t length = sizeof(address);
  ASSERT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length), 0);
  std::vector<int> fillers;
  for (int i = 0; i < 4; ++i) {  // fill the accept queue (and the SYN queue behind it)
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    (void)::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address));
    fillers.push_back(fd);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  MqttSettings s = Settings();
  s.broker_host = absl::StrCat("127.0.0.1:", ntohs(address.sin_port));
  s.dial_timeout = std::chrono::seconds(120);
  TransportClients clients = Make(s);
  ASSERT_NE(clients.subscriber, nullptr);
  ASSERT_TRUE(clients.subscriber->Start([](cloudevents::Event, AckFn) {}, nullptr).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the connect is under way
  const auto stop_started = std::chrono::steady_clock::now();
  clients.subscriber->Stop();
  // A liveness bound, not a timing measure: the hung connect would hold it for minutes.
  EXPECT_LT(std::chrono::steady_clock::now() - stop_started, std::chrono::seconds(10));
  for (int fd : fillers) {
    ::close(fd);
  }
  ::close(listener);
}

}  // namespace
}  // namespace mmi::transport
