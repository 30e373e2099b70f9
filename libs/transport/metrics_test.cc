#include "libs/transport/metrics.h"

#include <gtest/gtest.h>

#include "libs/transport/errors.h"
#include "libs/transport/testing/metric_value.h"

namespace mmi::transport {
namespace {

using testing::MetricValue;

cloudevents::Event EventOfType(std::string_view type) {
  cloudevents::Event event;
  event.type = std::string(type);
  return event;
}

TEST(ClassifyReceivedTest, MapsOcmTypesToTheClosedLabelSet) {
  EXPECT_EQ(cloudevents::ClassifyReceived(EventOfType(cloudevents::kStatusUpdateRequestType)),
            cloudevents::ReceivedKind::kStatus);
  EXPECT_EQ(cloudevents::ClassifyReceived(EventOfType(cloudevents::kStatusResyncResponseType)),
            cloudevents::ReceivedKind::kStatus);
  EXPECT_EQ(cloudevents::ClassifyReceived(EventOfType(cloudevents::kSpecResyncRequestType)),
            cloudevents::ReceivedKind::kSpecResync);
  EXPECT_EQ(cloudevents::ClassifyReceived(EventOfType(cloudevents::kStatusResyncRequestType)),
            cloudevents::ReceivedKind::kStatusResync);
  EXPECT_EQ(cloudevents::ClassifyReceived(EventOfType(cloudevents::kSpecCreateRequestType)),
            cloudevents::ReceivedKind::kOther);
  EXPECT_EQ(cloudevents::ClassifyReceived(EventOfType("not.a.type")),
            cloudevents::ReceivedKind::kOther);
}

TEST(PublishResultNameTest, DistinguishesUnknownConsumerFromOtherPreconditions) {
  EXPECT_EQ(PublishResultName(absl::OkStatus()), "ok");
  EXPECT_EQ(PublishResultName(UnknownConsumerError("c1", "x")), "unknown_consumer");
  EXPECT_EQ(PublishResultName(absl::FailedPreconditionError("x")), "failed_precondition");
  EXPECT_EQ(PublishResultName(absl::UnavailableError("x")), "unavailable");
  EXPECT_EQ(PublishResultName(absl::InternalError("x")), "other");
}

TEST(TransportMetricsTest, CountsEachOutcomeUnderItsLabels) {
  prometheus::Registry registry;
  TransportMetrics metrics(registry, "mqtt", ClientRole::kPublisher);
  metrics.RecordPublish(absl::OkStatus(), std::chrono::milliseconds(3));
  metrics.RecordPublish(absl::OkStatus(), std::chrono::milliseconds(5));
  metrics.RecordPublish(absl::UnavailableError("down"), std::chrono::milliseconds(1));
  metrics.SetConnected(true);
  metrics.RecordReconnect();
  metrics.RecordReceived(cloudevents::ReceivedKind::kStatus);
  metrics.RecordRejected(RejectReason::kOversize);
  metrics.SetPublishHeld(7);

  EXPECT_EQ(MetricValue(registry, "mmi_events_published_total",
                        {{"transport", "mqtt"}, {"result", "ok"}}),
            2);
  EXPECT_EQ(MetricValue(registry, "mmi_events_published_total",
                        {{"transport", "mqtt"}, {"result", "unavailable"}}),
            1);
  EXPECT_EQ(MetricValue(registry, "mmi_publish_duration_seconds", {{"transport", "mqtt"}}), 3);
  EXPECT_EQ(MetricValue(registry, "mmi_transport_connected",
                        {{"transport", "mqtt"}, {"client", "publisher"}}),
            1);
  EXPECT_EQ(MetricValue(registry, "mmi_transport_reconnects_total", {{"transport", "mqtt"}}), 1);
  EXPECT_EQ(MetricValue(registry, "mmi_events_received_total",
                        {{"transport", "mqtt"}, {"type", "status"}}),
            1);
  EXPECT_EQ(MetricValue(registry, "mmi_transport_messages_rejected_total",
                        {{"transport", "mqtt"}, {"reason", "oversize"}}),
            1);
  EXPECT_EQ(MetricValue(registry, "mmi_transport_publish_held", {{"transport", "mqtt"}}), 7);
}

TEST(TransportMetricsTest, PublisherAndSubscriberShareOneRegistryWithoutClashing) {
  prometheus::Registry registry;
  TransportMetrics publisher(registry, "kafka", ClientRole::kPublisher);
  TransportMetrics subscriber(registry, "kafka", ClientRole::kSubscriber);
  publisher.SetConnected(true);
  subscriber.SetConnected(false);
  EXPECT_EQ(MetricValue(registry, "mmi_transport_connected",
                        {{"transport", "kafka"}, {"client", "publisher"}}),
            1);
  EXPECT_EQ(MetricValue(registry, "mmi_transport_connected",
                        {{"transport", "kafka"}, {"client", "subscriber"}}),
            0);
}

}  // namespace
}  // namespace mmi::transport
