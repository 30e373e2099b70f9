// GrpcPublisher on a real loopback TCP socket against FakeCloudEventService (a protocol test
// double, not Maestro): it comes back by itself after the server restarts on its port and after
// the client idle timeout (an in-process channel has no connectivity state, so only a socket can
// show it), and it speaks TLS 1.3 with a bearer token. Integration label: real sockets, waits of
// a few seconds, certificates made by the openssl command.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <sstream>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "libs/common/testing/fake_clock.h"
#include "libs/transport/grpc/grpc_channel.h"
#include "libs/transport/grpc/grpc_publisher.h"
#include "libs/transport/grpc/testing/fake_cloud_event_service.h"
#include "libs/transport/testing/metric_value.h"
#include "libs/transport/testing/test_events.h"
#include "tests/support/wait.h"

namespace mmi::transport {
namespace {

using testing::FakeCloudEventService;
using testing::MakeSpecEvent;
using testing::MetricValue;

constexpr auto kWait = std::chrono::seconds(10);

bool WaitUntil(const std::function<bool()>& condition) {
  return mmi::testing::WaitFor(condition, kWait, std::chrono::milliseconds(5));
}

// Connectivity on a real loopback TCP socket: the server goes away and comes back on the same
// port, or the channel idles. An in-process channel has no connectivity state, so only a socket
// can show that the publisher comes back by itself.
class GrpcReconnectTest : public ::testing::Test {
 protected:
  GrpcReconnectTest() {
    settings_.url = service_.address();
    settings_.source_id = "mmi";
    settings_.reconnect_backoff = {std::chrono::milliseconds(100), std::chrono::milliseconds(500),
                                   2.0, 0.0};
  }

  std::shared_ptr<grpc::Channel> Channel() {
    auto channel = MakeGrpcChannel(settings_);
    EXPECT_TRUE(channel.ok()) << channel.status();
    return *channel;
  }

  absl::Status PublishAndWait(Publisher& publisher, int seq) {
    std::promise<absl::Status> result;
    publisher.Publish(MakeSpecEvent("mmi", "cluster1", seq),
                      [&result](absl::Status s) { result.set_value(s); });
    auto future = result.get_future();
    if (future.wait_for(kWait) != std::future_status::ready) {
      return absl::DeadlineExceededError("test: no callback");
    }
    return future.get();
  }

  double Reconnects() {
    return MetricValue(registry_, "mmi_transport_reconnects_total",
                       {{"transport", "grpc"}, {"client", "publisher"}});
  }
  double Connected() {
    return MetricValue(registry_, "mmi_transport_connected",
                       {{"transport", "grpc"}, {"client", "publisher"}});
  }

  FakeCloudEventService service_{FakeCloudEventService::Listen::kLoopbackTcp};
  GrpcSettings settings_;
  mmi::testing::FakeClock clock_;
  prometheus::Registry registry_;
};

// The dispatcher's outbox publishes only while connected(): the publisher must get there on its
// own after a restart, without any Publish() to wake the channel.
TEST_F(GrpcReconnectTest, AnUnusedPublisherIsConnectedAgainAfterTheServerRestartsOnItsPort) {
  GrpcPublisher publisher(settings_, Channel(), clock_, registry_);
  ASSERT_TRUE(publisher.Start().ok());
  ASSERT_TRUE(WaitUntil([&] { return publisher.connected(); }));
  ASSERT_TRUE(PublishAndWait(publisher, 1).ok());

  service_.StopServing();
  ASSERT_TRUE(WaitUntil([&] { return !publisher.connected(); }));
  EXPECT_EQ(Connected(), 0);
  EXPECT_EQ(PublishAndWait(publisher, 2).code(), absl::StatusCode::kUnavailable);

  service_.StartServing();
  ASSERT_TRUE(WaitUntil([&] { return publisher.connected(); }))
      << "the publisher did not reconnect by itself";
  EXPECT_EQ(Connected(), 1);
  EXPECT_GE(Reconnects(), 1);
  ASSERT_TRUE(PublishAndWait(publisher, 3).ok());
  ASSERT_EQ(service_.publishes().size(), 2u);
  EXPECT_EQ(service_.publishes().back().event.id(), "spec-cluster1-3");
  publisher.Stop();
  EXPECT_FALSE(publisher.connected());
}

TEST_F(GrpcReconnectTest, AChannelLeftIdlePastTheIdleTimeoutIsWokenAndPublishesAgain) {
  settings_.idle_timeout = std::chrono::seconds(1);  // gRPC's floor
  GrpcPublisher publisher(settings_, Channel(), clock_, registry_);
  ASSERT_TRUE(publisher.Start().ok());
  ASSERT_TRUE(WaitUntil([&] { return publisher.connected(); }));
  ASSERT_TRUE(PublishAndWait(publisher, 1).ok());
  // No call for longer than the idle timeout: gRPC drops the connection (IDLE); the watcher
  // connects again, which counts as a reconnect.
  ASSERT_TRUE(WaitUntil([&] { return Reconnects() >= 1; })) << "the idle channel was not woken";
  ASSERT_TRUE(WaitUntil([&] { return publisher.connected(); }));
  ASSERT_TRUE(PublishAndWait(publisher, 2).ok());
  EXPECT_EQ(service_.publishes().size(), 2u);
  publisher.Stop();
}

TEST_F(GrpcReconnectTest, StopWithTheServerGoneReturnsWithEveryCallbackRun) {
  GrpcPublisher publisher(settings_, Channel(), clock_, registry_);
  ASSERT_TRUE(publisher.Start().ok());
  ASSERT_TRUE(WaitUntil([&] { return publisher.connected(); }));
  service_.StopServing();
  ASSERT_TRUE(WaitUntil([&] { return !publisher.connected(); }));
  std::promise<absl::Status> result;
  publisher.Publish(MakeSpecEvent("mmi", "cluster1", 1),
                    [&result](absl::Status s) { result.set_value(s); });
  publisher.Stop();
  auto future = result.get_future();
  ASSERT_EQ(future.wait_for(std::chrono::seconds(0)), std::future_status::ready)
      << "Stop() returned before the in-flight call's callback ran";
  EXPECT_FALSE(future.get().ok());
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

// Maestro's source server speaks TLS 1.3 only and authenticates with a bearer token (§4.7). The
// test double serves TLS on a loopback port with a certificate made here by openssl; its TLS key
// log tells which protocol version each connection negotiated.
class GrpcTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir_template[] = "/tmp/mmi-grpc-tls-XXXXXX";
    ASSERT_NE(::mkdtemp(dir_template), nullptr);
    dir_ = dir_template;
    const std::string command = absl::StrCat(
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 "
        "-subj /CN=maestro-grpc.test -addext subjectAltName=IP:127.0.0.1 -keyout '",
        dir_, "/server.key' -out '", dir_, "/server.crt' > '", dir_, "/openssl.log' 2>&1");
    ASSERT_EQ(std::system(command.c_str()), 0)
        << "openssl could not make the test certificate: " << ReadFile(dir_ + "/openssl.log");
    tls_.cert_pem = ReadFile(dir_ + "/server.crt");
    tls_.key_pem = ReadFile(dir_ + "/server.key");
    tls_.key_log_file = dir_ + "/keylog.txt";
    ASSERT_FALSE(tls_.cert_pem.empty());
  }
  void TearDown() override {
    if (!dir_.empty()) {
      std::filesystem::remove_all(dir_);
    }
  }

  GrpcSettings Settings(const std::string& address, const std::string& token) const {
    GrpcSettings s;
    s.url = address;
    s.source_id = "mmi";
    s.tls.enabled = true;
    s.tls.ca_file = dir_ + "/server.crt";
    s.bearer_token = token;
    s.reconnect_backoff = {std::chrono::milliseconds(100), std::chrono::milliseconds(500), 2.0,
                           0.0};
    return s;
  }

  static absl::Status PublishAndWait(Publisher& publisher) {
    std::promise<absl::Status> result;
    publisher.Publish(MakeSpecEvent("mmi", "cluster1", 1),
                      [&result](absl::Status s) { result.set_value(s); });
    auto future = result.get_future();
    if (future.wait_for(kWait) != std::future_status::ready) {
      return absl::DeadlineExceededError("test: no callback");
    }
    return future.get();
  }

  std::string dir_;
  FakeCloudEventService::ServerTls tls_;
  mmi::testing::FakeClock clock_;
  prometheus::Registry registry_;
};

TEST_F(GrpcTlsTest, PublishesOverTls13WithTheBearerTokenAndIsRefusedWithAWrongOne) {
  FakeCloudEventService maestro(tls_);
  maestro.RequireBearerToken("t0ken");
  {
    auto channel = MakeGrpcChannel(Settings(maestro.address(), "t0ken"));
    ASSERT_TRUE(channel.ok()) << channel.status();
    GrpcPublisher publisher(Settings(maestro.address(), "t0ken"), *channel, clock_, registry_);
    ASSERT_TRUE(publisher.Start().ok());
    ASSERT_TRUE(WaitUntil([&] { return publisher.connected(); })) << "no TLS connection";
    const absl::Status status = PublishAndWait(publisher);
    ASSERT_TRUE(status.ok()) << status;
    publisher.Stop();
  }
  ASSERT_EQ(maestro.publishes().size(), 1u);
  EXPECT_EQ(maestro.publishes()[0].authorization, "Bearer t0ken");
  const std::string key_log = ReadFile(tls_.key_log_file);
  EXPECT_NE(key_log.find("CLIENT_HANDSHAKE_TRAFFIC_SECRET"), std::string::npos)
      << "no TLS 1.3 handshake in the key log:\n"
      << key_log;
  EXPECT_EQ(key_log.find("CLIENT_RANDOM"), std::string::npos) << "a TLS 1.2 connection";

  auto channel = MakeGrpcChannel(Settings(maestro.address(), "wrong"));
  ASSERT_TRUE(channel.ok()) << channel.status();
  GrpcPublisher refused(Settings(maestro.address(), "wrong"), *channel, clock_, registry_);
  ASSERT_TRUE(refused.Start().ok());
  EXPECT_EQ(PublishAndWait(refused).code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(maestro.publishes().size(), 1u) << "a refused call is not taken";
  refused.Stop();
}

TEST_F(GrpcTlsTest, AServerCertificateNotSignedByTheConfiguredCaIsRefused) {
  FakeCloudEventService maestro(tls_);
  GrpcSettings settings = Settings(maestro.address(), "t0ken");
  // Another self-signed certificate as the only trusted CA.
  const std::string command = absl::StrCat(
      "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 "
      "-subj /CN=other-ca -keyout '",
      dir_, "/other.key' -out '", dir_, "/other.crt' > /dev/null 2>&1");
  ASSERT_EQ(std::system(command.c_str()), 0);
  settings.tls.ca_file = dir_ + "/other.crt";
  auto channel = MakeGrpcChannel(settings);
  ASSERT_TRUE(channel.ok()) << channel.status();
  GrpcPublisher publisher(settings, *channel, clock_, registry_);
  ASSERT_TRUE(publisher.Start().ok());
  EXPECT_EQ(PublishAndWait(publisher).code(), absl::StatusCode::kUnavailable);
  EXPECT_FALSE(publisher.connected());
  EXPECT_TRUE(maestro.publishes().empty());
  publisher.Stop();
}

}  // namespace
}  // namespace mmi::transport
