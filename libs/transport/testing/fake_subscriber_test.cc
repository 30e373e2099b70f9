#include "libs/transport/testing/fake_subscriber.h"

#include <gtest/gtest.h>

#include <vector>

#include "libs/cloudevents/json_format.h"
#include "libs/transport/testing/metric_value.h"

namespace mmi::transport::testing {
namespace {

cloudevents::Event StatusEvent(std::string id) {
  cloudevents::Event event;
  event.id = std::move(id);
  event.source = "cluster1-work-agent";
  event.type = std::string(cloudevents::kStatusUpdateRequestType);
  event.SetString(cloudevents::kExtClusterName, "cluster1");
  return event;
}

class FakeSubscriberTest : public ::testing::Test {
 protected:
  void StartRecording() {
    ASSERT_TRUE(subscriber_
                    .Start(
                        [this](cloudevents::Event event, AckFn ack) {
                          received_.push_back(event.id);
                          acks_.push_back(std::move(ack));
                        },
                        [this](bool resubscribed) { hooks_.push_back(resubscribed); })
                    .ok());
  }

  prometheus::Registry registry_;
  FakeSubscriber subscriber_{registry_};
  std::vector<std::string> received_;
  std::vector<AckFn> acks_;
  std::vector<bool> hooks_;
};

TEST_F(FakeSubscriberTest, DeliversInOrderAndTracksAcks) {
  StartRecording();
  EXPECT_EQ(hooks_, std::vector<bool>{false});
  auto a = subscriber_.Deliver(StatusEvent("a"));
  auto b = subscriber_.Deliver(StatusEvent("b"));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(received_, (std::vector<std::string>{"a", "b"}));
  std::move(acks_[0])();
  EXPECT_TRUE(subscriber_.acked(*a));
  EXPECT_FALSE(subscriber_.acked(*b));
  EXPECT_EQ(subscriber_.unacked(), std::vector<int64_t>{*b});
  EXPECT_EQ(MetricValue(registry_, "mmi_events_received_total",
                        {{"transport", "fake"}, {"type", "status"}}),
            2);
}

TEST_F(FakeSubscriberTest, RedeliversOnlyUnackedEvents) {
  StartRecording();
  ASSERT_TRUE(subscriber_.Deliver(StatusEvent("a")).ok());
  ASSERT_TRUE(subscriber_.Deliver(StatusEvent("b")).ok());
  std::move(acks_[0])();
  EXPECT_EQ(subscriber_.RedeliverUnacked(), 1);
  EXPECT_EQ(received_, (std::vector<std::string>{"a", "b", "b"}));
}

TEST_F(FakeSubscriberTest, RejectsMalformedJsonAndKeepsTheSubscription) {
  StartRecording();
  auto bad = subscriber_.DeliverEncoded("{not json");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  auto json = cloudevents::EncodeStructuredJson(StatusEvent("ok"));
  ASSERT_TRUE(json.ok()) << json.status();
  EXPECT_TRUE(subscriber_.DeliverEncoded(*json).ok());
  EXPECT_EQ(received_, std::vector<std::string>{"ok"});
  EXPECT_EQ(subscriber_.rejected(), 1);
  EXPECT_EQ(MetricValue(registry_, "mmi_transport_messages_rejected_total",
                        {{"transport", "fake"}, {"reason", "malformed"}}),
            1);
}

TEST_F(FakeSubscriberTest, RejectsOversizeMessagesWithoutDecoding) {
  FakeSubscriber small(registry_, cloudevents::CodecLimits{.max_event_bytes = 64});
  std::vector<std::string> got;
  ASSERT_TRUE(small.Start([&got](cloudevents::Event e, AckFn) { got.push_back(e.id); }, {}).ok());
  EXPECT_FALSE(small.DeliverEncoded(std::string(65, ' ')).ok());
  EXPECT_TRUE(got.empty());
  EXPECT_EQ(MetricValue(registry_, "mmi_transport_messages_rejected_total",
                        {{"transport", "fake"}, {"reason", "oversize"}}),
            1);
}

TEST_F(FakeSubscriberTest, ReconnectRunsTheHookWithResubscribed) {
  StartRecording();
  subscriber_.SimulateDisconnect();
  EXPECT_FALSE(subscriber_.connected());
  EXPECT_EQ(subscriber_.Deliver(StatusEvent("lost")).status().code(),
            absl::StatusCode::kUnavailable);
  subscriber_.SimulateReconnect();
  EXPECT_TRUE(subscriber_.connected());
  EXPECT_EQ(hooks_, (std::vector<bool>{false, true}));
}

TEST_F(FakeSubscriberTest, IgnoresAcksAfterStop) {
  StartRecording();
  auto a = subscriber_.Deliver(StatusEvent("a"));
  ASSERT_TRUE(a.ok());
  subscriber_.Stop();
  std::move(acks_[0])();
  EXPECT_FALSE(subscriber_.acked(*a));
  EXPECT_EQ(subscriber_.Deliver(StatusEvent("b")).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace mmi::transport::testing
