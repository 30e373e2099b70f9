// GrpcPublisher / GrpcSubscriber against FakeCloudEventService (a protocol test double, not
// Maestro): Publish outcomes, the Subscribe stream, heartbeats, resets, limits in process; the
// publisher's reconnect after a server restart and after the idle timeout on a loopback socket.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "libs/cloudevents/grpc_codec.h"
#include "libs/common/testing/fake_clock.h"
#include "libs/transport/errors.h"
#include "libs/transport/grpc/grpc_channel.h"
#include "libs/transport/grpc/grpc_publisher.h"
#include "libs/transport/grpc/grpc_subscriber.h"
#include "libs/transport/grpc/testing/fake_cloud_event_service.h"
#include "libs/transport/testing/metric_value.h"
#include "libs/transport/testing/test_events.h"

namespace mmi::transport {
namespace {

using testing::FakeCloudEventService;
using testing::MakeSpecEvent;
using testing::MakeStatusEvent;
using testing::MetricValue;
using testing::SeqOf;

constexpr auto kWait = std::chrono::seconds(10);

bool WaitUntil(const std::function<bool()>& condition) {
  const auto deadline = std::chrono::steady_clock::now() + kWait;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) {
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

// Records handler and hook calls.
class Recorder {
 public:
  EventHandler Handler() {
    return [this](cloudevents::Event event, AckFn ack) {
      std::move(ack)();
      absl::MutexLock lock(&mu_);
      events_.push_back(std::move(event));
    };
  }
  SubscribedHook Hook() {
    return [this](bool resubscribed) {
      absl::MutexLock lock(&mu_);
      hooks_.push_back(resubscribed);
    };
  }
  std::vector<cloudevents::Event> events() {
    absl::MutexLock lock(&mu_);
    return events_;
  }
  std::vector<bool> hooks() {
    absl::MutexLock lock(&mu_);
    return hooks_;
  }

 private:
  absl::Mutex mu_;
  std::vector<cloudevents::Event> events_ ABSL_GUARDED_BY(mu_);
  std::vector<bool> hooks_ ABSL_GUARDED_BY(mu_);
};

class GrpcTransportTest : public ::testing::Test {
 protected:
  GrpcTransportTest() {
    settings_.url = "maestro-grpc.test:8090";  // unused: the channel is in-process
    settings_.source_id = "mmi";
    settings_.reconnect_backoff = {std::chrono::milliseconds(1), std::chrono::milliseconds(10), 2.0,
                                   0.0};
    settings_.max_receive_bytes = std::size_t{4} * 1024 * 1024;
  }

  std::shared_ptr<grpc::Channel> Channel() {
    return service_.InProcessChannel(GrpcChannelArguments(settings_));
  }

  absl::Status PublishAndWait(Publisher& publisher, cloudevents::Event event) {
    std::promise<absl::Status> result;
    publisher.Publish(std::move(event), [&result](absl::Status s) { result.set_value(s); });
    auto future = result.get_future();
    if (future.wait_for(kWait) != std::future_status::ready) {
      return absl::DeadlineExceededError("test: no callback");
    }
    return future.get();
  }

  io::cloudevents::v1::CloudEvent Encoded(const cloudevents::Event& event) {
    auto encoded = cloudevents::EncodeGrpc(event);
    EXPECT_TRUE(encoded.ok()) << encoded.status();
    return *encoded;
  }

  FakeCloudEventService service_;
  GrpcSettings settings_;
  mmi::testing::FakeClock clock_;
  prometheus::Registry registry_;
};

TEST_F(GrpcTransportTest, PublishSendsTheEventInOcmBinaryModeWithTheBearerToken) {
  settings_.tls.enabled = true;  // a token requires TLS in the settings; the channel is fake
  settings_.bearer_token = "t0ken";
  GrpcPublisher publisher(settings_, Channel(), clock_, registry_,
                          GrpcPublisher::ChannelKind::kInProcess);
  ASSERT_TRUE(publisher.Start().ok());
  ASSERT_TRUE(PublishAndWait(publisher, MakeSpecEvent("mmi", "cluster1", 7)).ok());
  const auto publishes = service_.publishes();
  ASSERT_EQ(publishes.size(), 1u);
  EXPECT_EQ(publishes[0].authorization, "Bearer t0ken");
  EXPECT_EQ(publishes[0].event.id(), "spec-cluster1-7");
  EXPECT_EQ(publishes[0].event.attributes().at("ce-clustername").ce_string(), "cluster1");
  EXPECT_EQ(publishes[0].event.attributes().at("ce-resourceversion").ce_integer(), 7);
  EXPECT_EQ(MetricValue(registry_, "mmi_events_published_total",
                        {{"transport", "grpc"}, {"result", "ok"}}),
            1);
  publisher.Stop();
}

TEST_F(GrpcTransportTest, PublishToAnUnknownConsumerIsReportedSoTheCallerCanRegisterIt) {
  service_.FailNextPublish(grpc::Status(
      grpc::StatusCode::UNKNOWN,
      "failed to create resource: maestro-9: Unable to create Resource: ERROR: insert or update "
      "on table \"resources\" violates foreign key constraint \"fk_resources_consumers\" "
      "(SQLSTATE 23503)"));
  GrpcPublisher publisher(settings_, Channel(), clock_, registry_,
                          GrpcPublisher::ChannelKind::kInProcess);
  ASSERT_TRUE(publisher.Start().ok());
  const absl::Status status = PublishAndWait(publisher, MakeSpecEvent("mmi", "cluster9", 1));
  EXPECT_TRUE(IsUnknownConsumer(status)) << status;
  EXPECT_EQ(UnknownConsumerCluster(status), "cluster9");
  EXPECT_EQ(MetricValue(registry_, "mmi_events_published_total",
                        {{"transport", "grpc"}, {"result", "unknown_consumer"}}),
            1);
}

TEST_F(GrpcTransportTest, PublishRejectsWhatItCannotSendWithoutCallingTheServer) {
  GrpcPublisher publisher(settings_, Channel(), clock_, registry_,
                          GrpcPublisher::ChannelKind::kInProcess);
  EXPECT_EQ(PublishAndWait(publisher, MakeSpecEvent("mmi", "c1", 1)).code(),
            absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(publisher.Start().ok());
  EXPECT_EQ(PublishAndWait(publisher, MakeSpecEvent("other-source", "c1", 1)).code(),
            absl::StatusCode::kInvalidArgument);
  cloudevents::Event huge = MakeSpecEvent("mmi", "c1", 2);
  huge.data = std::string(5 * 1024 * 1024, ' ');
  EXPECT_EQ(PublishAndWait(publisher, huge).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(service_.publishes().empty());
  publisher.Stop();
  EXPECT_EQ(PublishAndWait(publisher, MakeSpecEvent("mmi", "c1", 3)).code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(GrpcTransportTest, SubscribeAsksForOurSourceAndDeliversStatusEventsButNotHeartbeats) {
  GrpcSubscriber subscriber(settings_, Channel(), clock_, registry_);
  Recorder recorder;
  ASSERT_TRUE(subscriber.Start(recorder.Handler(), recorder.Hook()).ok());
  // The hook runs after the stream counts as connected: wait for both.
  ASSERT_TRUE(WaitUntil([&] {
    return subscriber.connected() && service_.open_streams() == 1 && !recorder.hooks().empty();
  }));
  EXPECT_EQ(recorder.hooks(), std::vector<bool>{false});
  const auto subscribes = service_.subscribes();
  ASSERT_EQ(subscribes.size(), 1u);
  EXPECT_EQ(subscribes[0].request.source(), "mmi");
  EXPECT_EQ(subscribes[0].request.data_type(),
            "io.open-cluster-management.works.v1alpha1.manifestbundles");
  EXPECT_EQ(subscribes[0].request.cluster_name(), "");

  service_.Send(Encoded(MakeStatusEvent("maestro", "cluster1", 1)));
  service_.SendHeartbeat();
  service_.Send(Encoded(MakeStatusEvent("maestro", "cluster2", 2)));
  ASSERT_TRUE(WaitUntil([&] { return recorder.events().size() == 2; }));
  EXPECT_EQ(SeqOf(recorder.events()[0]), 1);
  EXPECT_EQ(SeqOf(recorder.events()[1]), 2);
  EXPECT_EQ(MetricValue(registry_, "mmi_events_received_total",
                        {{"transport", "grpc"}, {"type", "status"}}),
            2);
  subscriber.Stop();
  EXPECT_FALSE(subscriber.connected());
}

TEST_F(GrpcTransportTest, AStreamResetResubscribesAndRunsTheHookAgain) {
  GrpcSubscriber subscriber(settings_, Channel(), clock_, registry_);
  Recorder recorder;
  ASSERT_TRUE(subscriber.Start(recorder.Handler(), recorder.Hook()).ok());
  ASSERT_TRUE(WaitUntil([&] { return service_.open_streams() == 1; }));
  service_.EndStreams(grpc::Status(grpc::StatusCode::UNAVAILABLE, "replica going away"));
  ASSERT_TRUE(WaitUntil([&] { return recorder.hooks().size() == 2; }));
  EXPECT_EQ(recorder.hooks(), (std::vector<bool>{false, true}));
  EXPECT_EQ(service_.subscribes().size(), 2u);
  EXPECT_EQ(MetricValue(registry_, "mmi_transport_reconnects_total",
                        {{"transport", "grpc"}, {"client", "subscriber"}}),
            1);
  subscriber.Stop();
}

TEST_F(GrpcTransportTest, ASilentStreamIsReopenedAfterTheHealthinessTimeout) {
  settings_.heartbeat_timeout = std::chrono::seconds(10);
  GrpcSubscriber subscriber(settings_, Channel(), clock_, registry_);
  Recorder recorder;
  ASSERT_TRUE(subscriber.Start(recorder.Handler(), recorder.Hook()).ok());
  ASSERT_TRUE(WaitUntil([&] { return recorder.hooks().size() == 1; }));
  clock_.Advance(std::chrono::seconds(11));
  ASSERT_TRUE(WaitUntil([&] { return recorder.hooks().size() == 2; }));
  EXPECT_EQ(service_.subscribes().size(), 2u);
  subscriber.Stop();
}

TEST_F(GrpcTransportTest, WithoutSubscriptionIdTheFirstMessageEstablishesTheStream) {
  service_.SetSendSubscriptionId(false);
  GrpcSubscriber subscriber(settings_, Channel(), clock_, registry_);
  Recorder recorder;
  ASSERT_TRUE(subscriber.Start(recorder.Handler(), recorder.Hook()).ok());
  ASSERT_TRUE(WaitUntil([&] { return service_.open_streams() == 1; }));
  EXPECT_FALSE(subscriber.connected());
  service_.SendHeartbeat();
  ASSERT_TRUE(WaitUntil([&] { return subscriber.connected() && !recorder.hooks().empty(); }));
  EXPECT_EQ(recorder.hooks(), std::vector<bool>{false});
  subscriber.Stop();
}

TEST_F(GrpcTransportTest, MalformedEventsAreRejectedAndTheStreamGoesOn) {
  GrpcSubscriber subscriber(settings_, Channel(), clock_, registry_);
  Recorder recorder;
  ASSERT_TRUE(subscriber.Start(recorder.Handler(), recorder.Hook()).ok());
  ASSERT_TRUE(WaitUntil([&] { return service_.open_streams() == 1; }));
  io::cloudevents::v1::CloudEvent malformed;  // no attributes, not a heartbeat
  malformed.set_id("bad");
  malformed.set_spec_version("1.0");
  malformed.set_type(std::string(cloudevents::kStatusUpdateRequestType));
  service_.Send(malformed);
  service_.Send(Encoded(MakeStatusEvent("maestro", "cluster1", 3)));
  ASSERT_TRUE(WaitUntil([&] { return recorder.events().size() == 1; }));
  EXPECT_EQ(SeqOf(recorder.events()[0]), 3);
  EXPECT_EQ(MetricValue(registry_, "mmi_transport_messages_rejected_total",
                        {{"transport", "grpc"}, {"reason", "malformed"}}),
            1);
  EXPECT_EQ(service_.subscribes().size(), 1u);
  subscriber.Stop();
}

TEST_F(GrpcTransportTest, AMessageOverTheReceiveLimitIsCountedAndTheStreamReopened) {
  GrpcSubscriber subscriber(settings_, Channel(), clock_, registry_);
  Recorder recorder;
  ASSERT_TRUE(subscriber.Start(recorder.Handler(), recorder.Hook()).ok());
  ASSERT_TRUE(WaitUntil([&] { return service_.open_streams() == 1; }));
  cloudevents::Event big = MakeStatusEvent("maestro", "cluster1", 4);
  big.data = std::string(5 * 1024 * 1024, ' ');
  auto encoded =
      cloudevents::EncodeGrpc(big, cloudevents::CodecLimits{.max_event_bytes = 8u << 20});
  ASSERT_TRUE(encoded.ok()) << encoded.status();
  service_.Send(*encoded);
  ASSERT_TRUE(WaitUntil([&] { return recorder.hooks().size() == 2; }));
  EXPECT_EQ(MetricValue(registry_, "mmi_transport_messages_rejected_total",
                        {{"transport", "grpc"}, {"reason", "oversize"}}),
            1);
  service_.Send(Encoded(MakeStatusEvent("maestro", "cluster1", 5)));
  ASSERT_TRUE(WaitUntil([&] { return recorder.events().size() == 1; }));
  EXPECT_EQ(SeqOf(recorder.events()[0]), 5);
  subscriber.Stop();
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

}  // namespace
}  // namespace mmi::transport

namespace mmi::transport {
namespace {

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
