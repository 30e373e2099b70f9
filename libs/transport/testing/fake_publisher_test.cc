#include "libs/transport/testing/fake_publisher.h"

#include <gtest/gtest.h>

#include <vector>

namespace mmi::transport::testing {
namespace {

cloudevents::Event MakeEvent(std::string id) {
  cloudevents::Event event;
  event.id = std::move(id);
  event.source = "mmi";
  event.type = std::string(cloudevents::kSpecCreateRequestType);
  return event;
}

TEST(FakePublisherTest, CompletesImmediatelyWithScriptedResultsThenOk) {
  FakePublisher publisher;
  ASSERT_TRUE(publisher.Start().ok());
  publisher.FailNext(absl::UnavailableError("down"));
  std::vector<absl::StatusCode> codes;
  for (const char* id : {"a", "b"}) {
    publisher.Publish(MakeEvent(id), [&codes](absl::Status s) { codes.push_back(s.code()); });
  }
  EXPECT_EQ(codes,
            (std::vector<absl::StatusCode>{absl::StatusCode::kUnavailable, absl::StatusCode::kOk}));
  ASSERT_EQ(publisher.published().size(), 2u);
  ASSERT_EQ(publisher.accepted().size(), 1u);
  EXPECT_EQ(publisher.accepted()[0].id, "b");
}

TEST(FakePublisherTest, ManualModeHoldsCallbacksUntilCompleted) {
  FakePublisher publisher(FakePublisher::Mode::kManual);
  ASSERT_TRUE(publisher.Start().ok());
  int ok = 0;
  publisher.Publish(MakeEvent("a"), [&ok](absl::Status s) { ok += s.ok() ? 1 : 0; });
  publisher.Publish(MakeEvent("b"), [&ok](absl::Status s) { ok += s.ok() ? 1 : 0; });
  EXPECT_EQ(publisher.pending(), 2);
  EXPECT_EQ(ok, 0);
  EXPECT_TRUE(publisher.CompleteNext());
  EXPECT_EQ(ok, 1);
  EXPECT_EQ(publisher.CompleteAll(), 1);
  EXPECT_EQ(ok, 2);
  EXPECT_FALSE(publisher.CompleteNext());
}

TEST(FakePublisherTest, StopFailsPendingEventsAndRefusesNewOnes) {
  FakePublisher publisher(FakePublisher::Mode::kManual);
  ASSERT_TRUE(publisher.Start().ok());
  absl::Status first;
  publisher.Publish(MakeEvent("a"), [&first](absl::Status s) { first = s; });
  publisher.Stop();
  publisher.Stop();
  EXPECT_EQ(first.code(), absl::StatusCode::kUnavailable);
  absl::Status late;
  publisher.Publish(MakeEvent("b"), [&late](absl::Status s) { late = s; });
  EXPECT_EQ(late.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(publisher.stop_calls(), 2);
  EXPECT_FALSE(publisher.connected());
}

TEST(FakePublisherTest, ReportsUnavailableWhileDisconnected) {
  FakePublisher publisher;
  ASSERT_TRUE(publisher.Start().ok());
  publisher.SetConnected(false);
  absl::Status result;
  publisher.Publish(MakeEvent("a"), [&result](absl::Status s) { result = s; });
  EXPECT_EQ(result.code(), absl::StatusCode::kUnavailable);
  EXPECT_FALSE(publisher.connected());
}

TEST(FakePublisherTest, ReturnsTheScriptedStartError) {
  FakePublisher publisher;
  publisher.SetStartResult(absl::InvalidArgumentError("transport.mqtt.brokerHost: bad"));
  EXPECT_EQ(publisher.Start().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(publisher.start_calls(), 1);
}

}  // namespace
}  // namespace mmi::transport::testing
