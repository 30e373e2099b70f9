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

// The dispatcher's outbox keeps at most max_in_flight() calls open (Maestro has no flow control).
TEST_F(GrpcTransportTest, TheBoundOnCallsInFlightIsTheSetting) {
  settings_.max_in_flight = 7;
  GrpcPublisher publisher(settings_, Channel(), clock_, registry_,
                          GrpcPublisher::ChannelKind::kInProcess);
  EXPECT_EQ(publisher.max_in_flight(), 7u);
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

}  // namespace
}  // namespace mmi::transport
