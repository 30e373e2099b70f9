#include "services/dispatcher/apps/outbox.h"

#include <gtest/gtest.h>

#include "libs/cloudevents/json_format.h"
#include "libs/common/testing/fake_clock.h"
#include "libs/common/testing/log_capture.h"
#include "libs/store/testing/fake_dispatch_store.h"
#include "libs/transport/testing/fake_publisher.h"
#include "libs/transport/testing/metric_value.h"
#include "prometheus/registry.h"

namespace mmi::dispatcher {
namespace {

using transport::testing::FakePublisher;
using transport::testing::MetricValue;

store::DispatchChange Change(const std::string& id, int32_t version) {
  cloudevents::Event e;
  e.id = id + "-" + std::to_string(version);
  e.source = "app-work-client";
  e.type = std::string(cloudevents::kSpecUpdateRequestType);
  e.SetString(cloudevents::kExtClusterName, "cluster1");
  e.SetString(cloudevents::kExtResourceId, id);
  e.SetInteger(cloudevents::kExtResourceVersion, version);
  store::DispatchChange c;
  c.resource.resource_id = id;
  c.resource.cluster = "cluster1";
  c.resource.hub_namespace = "argocd";
  c.resource.hub_name = id;
  c.resource.work_name = "argocd-" + id;
  c.resource.version = version;
  c.resource.payload_hash = "h" + std::to_string(version);
  c.event.resource_id = id;
  c.event.cluster = "cluster1";
  c.event.action = store::OutboxAction::kUpdate;
  c.event.version = version;
  c.event.payload_hash = c.resource.payload_hash;
  c.event.event = cloudevents::EncodeStructuredJson(e).value();
  return c;
}

class OutboxTest : public ::testing::Test {
 protected:
  std::vector<store::OutboxEntry> Record(const std::vector<store::DispatchChange>& changes) {
    auto seqs = store_.Record(changes);
    EXPECT_TRUE(seqs.ok());
    std::vector<store::OutboxEntry> out;
    for (size_t i = 0; i < changes.size(); ++i) {
      out.push_back(changes[i].event);
      out.back().seq = (*seqs)[i];
    }
    return out;
  }
  void RunAll() {
    while (loop_.RunUntilIdleForTest() + workers_.RunUntilIdleForTest() > 0) {
    }
  }
  // The loop only: store calls posted to the workers stay in flight.
  void RunLoop() {
    while (loop_.RunUntilIdleForTest() > 0) {
    }
  }
  // Marks wait 20 ms for others, at most `batch` per call.
  static OutboxSettings Lingering(size_t batch = OutboxSettings{}.mark_batch) {
    OutboxSettings settings;
    settings.mark_linger = std::chrono::milliseconds(20);
    settings.mark_batch = batch;
    return settings;
  }

  mmi::testing::FakeClock clock_;
  Loop loop_{clock_, "loop"};
  WorkerPool workers_{clock_, "workers", 1};
  store::testing::FakeDispatchStore store_;
  prometheus::Registry registry_;
  DispatcherMetrics metrics_{registry_, "fake"};
};

TEST_F(OutboxTest, AFailedPublishStaysInTheOutboxAndIsRetried) {
  FakePublisher publisher;
  ASSERT_TRUE(publisher.Start().ok());
  Outbox outbox(loop_, workers_, store_, publisher, clock_, metrics_, {});
  std::vector<std::string> hooked;
  outbox.SetPublishedHook([&](const store::OutboxEntry& e) { hooked.push_back(e.resource_id); });

  publisher.FailNext(absl::UnavailableError("broker down"));
  loop_.Post([&, entries = Record({Change("r1", 1)})]() mutable { outbox.Add(entries); });
  RunAll();
  EXPECT_EQ(publisher.published().size(), 1U);
  EXPECT_TRUE(publisher.accepted().empty());
  EXPECT_EQ(outbox.pending(), 1U);
  auto pending = store_.PendingOutbox(0, 10);
  ASSERT_TRUE(pending.ok());
  ASSERT_EQ(pending->size(), 1U);
  EXPECT_EQ((*pending)[0].attempts, 1);
  EXPECT_EQ(MetricValue(registry_, "mmi_dispatcher_dispatches_total",
                        {{"action", "update"}, {"result", "retry"}}),
            1);
  EXPECT_TRUE(hooked.empty());

  // After the backoff the same event (same CloudEvent id) goes out again and is accepted.
  clock_.Advance(std::chrono::seconds(2));
  RunAll();
  ASSERT_EQ(publisher.accepted().size(), 1U);
  EXPECT_EQ(publisher.accepted()[0].id, publisher.published()[0].id);
  EXPECT_EQ(outbox.pending(), 0U);
  EXPECT_TRUE(store_.PendingOutbox(0, 10)->empty());
  EXPECT_EQ(hooked, std::vector<std::string>{"r1"});
}

TEST_F(OutboxTest, PublishFailuresAreLoggedAtMostOncePerIntervalNotPerEvent) {
  mmi::testing::LogCapture logs;
  FakePublisher publisher;
  ASSERT_TRUE(publisher.Start().ok());
  Outbox outbox(loop_, workers_, store_, publisher, clock_, metrics_, {});
  for (int i = 0; i < 20; ++i) {
    publisher.FailNext(absl::UnauthenticatedError("token not authenticated"));
  }
  std::vector<store::DispatchChange> changes;
  for (int i = 0; i < 10; ++i) {
    changes.push_back(Change("r" + std::to_string(i), 1));
  }
  loop_.Post([&, entries = Record(changes)]() mutable { outbox.Add(entries); });
  RunAll();
  clock_.Advance(std::chrono::seconds(2));  // each retried once more, within the interval
  RunAll();
  EXPECT_EQ(MetricValue(registry_, "mmi_dispatcher_dispatches_total",
                        {{"action", "update"}, {"result", "retry"}}),
            20);
  auto count = [&](std::string_view what) {
    const std::string text = logs.text();
    int n = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
      ++n;
    }
    return n;
  };
  EXPECT_EQ(count("publish failed; will retry"), 1) << logs.text();

  // Once the broker takes events again, one line says so with the count not logged.
  clock_.Advance(std::chrono::seconds(40));
  RunAll();
  EXPECT_EQ(publisher.accepted().size(), 10U);
  EXPECT_EQ(count("publishing again"), 1) << logs.text();
  EXPECT_NE(logs.text().find("\"failures_not_logged\":19"), std::string::npos) << logs.text();
}

TEST_F(OutboxTest, AcceptedEventsLeaveTheStoreTogetherAfterTheLinger) {
  FakePublisher publisher(FakePublisher::Mode::kManual);
  ASSERT_TRUE(publisher.Start().ok());
  Outbox outbox(loop_, workers_, store_, publisher, clock_, metrics_, Lingering(3));
  auto entries =
      Record({Change("r1", 1), Change("r2", 1), Change("r3", 1), Change("r4", 1), Change("r5", 1)});
  loop_.Post([&] { outbox.Add(entries); });
  RunAll();
  ASSERT_EQ(publisher.pending(), 5);

  // Two accepted: they wait for others, still counted as pending.
  ASSERT_TRUE(publisher.CompleteNext());
  ASSERT_TRUE(publisher.CompleteNext());
  RunAll();
  EXPECT_EQ(store_.mark_published_calls(), 0);
  EXPECT_EQ(store_.PendingOutbox(0, 10)->size(), 5U);
  EXPECT_EQ(outbox.pending(), 5U);
  EXPECT_FALSE(outbox.WaitDrained(std::chrono::milliseconds(0)));

  // A third fills a batch: it goes at once, without waiting for the linger.
  ASSERT_TRUE(publisher.CompleteNext());
  RunAll();
  EXPECT_EQ(store_.mark_published_calls(), 1);
  EXPECT_EQ(store_.PendingOutbox(0, 10)->size(), 2U);

  // The last two: one call once the linger has passed.
  publisher.CompleteAll();
  RunAll();
  EXPECT_EQ(store_.mark_published_calls(), 1);
  EXPECT_EQ(outbox.pending(), 2U);
  clock_.Advance(std::chrono::milliseconds(20));
  RunAll();
  EXPECT_EQ(store_.mark_published_calls(), 2);
  EXPECT_TRUE(store_.PendingOutbox(0, 10)->empty());
  EXPECT_EQ(outbox.pending(), 0U);
  EXPECT_TRUE(outbox.WaitDrained(std::chrono::milliseconds(0)));
}

TEST_F(OutboxTest, TheLingerTimerFiringWhileABatchIsInFlightSendsNothingTwice) {
  FakePublisher publisher(FakePublisher::Mode::kManual);
  ASSERT_TRUE(publisher.Start().ok());
  Outbox outbox(loop_, workers_, store_, publisher, clock_, metrics_, Lingering(2));
  auto entries = Record({Change("r1", 1), Change("r2", 1), Change("r3", 1)});
  loop_.Post([&] { outbox.Add(entries); });
  RunAll();
  ASSERT_TRUE(publisher.CompleteNext());  // one accepted: the linger timer starts
  RunLoop();
  ASSERT_TRUE(publisher.CompleteNext());  // a full batch: sent at once, still on the workers
  RunLoop();
  clock_.Advance(std::chrono::milliseconds(20));  // the timer fires with the batch in flight
  RunLoop();
  RunAll();
  EXPECT_EQ(store_.mark_published_calls(), 1);
  EXPECT_EQ(store_.PendingOutbox(0, 10)->size(), 1U);
  publisher.CompleteAll();
  RunAll();
  clock_.Advance(std::chrono::milliseconds(20));
  RunAll();
  EXPECT_EQ(store_.mark_published_calls(), 2);
  EXPECT_TRUE(store_.PendingOutbox(0, 10)->empty());
  EXPECT_EQ(outbox.pending(), 0U);
}

TEST_F(OutboxTest, LingeringMarksAreKeptAndSentAgainWhenTheStoreFails) {
  FakePublisher publisher;
  ASSERT_TRUE(publisher.Start().ok());
  Outbox outbox(loop_, workers_, store_, publisher, clock_, metrics_, Lingering());
  auto entries = Record({Change("r1", 1), Change("r2", 1)});
  loop_.Post([&] { outbox.Add(entries); });
  RunAll();
  EXPECT_EQ(store_.mark_published_calls(), 0);
  store_.FailWithForTest(absl::UnavailableError("database down"));
  clock_.Advance(std::chrono::milliseconds(20));
  RunAll();
  EXPECT_EQ(store_.mark_published_calls(), 1);
  EXPECT_EQ(outbox.pending(), 2U);  // the two marks wait for the retry
  store_.FailWithForTest(absl::OkStatus());
  clock_.Advance(std::chrono::seconds(2));
  RunAll();
  clock_.Advance(std::chrono::milliseconds(20));
  RunAll();
  EXPECT_EQ(store_.mark_published_calls(), 2);
  EXPECT_TRUE(store_.PendingOutbox(0, 10)->empty());
  EXPECT_EQ(outbox.pending(), 0U);
}

TEST_F(OutboxTest, AnEventHandedOverInMemoryIsPublishedAsItWasAndAgainAfterAFailure) {
  FakePublisher publisher;
  ASSERT_TRUE(publisher.Start().ok());
  Outbox outbox(loop_, workers_, store_, publisher, clock_, metrics_, {});
  std::vector<RecordedEvent> recorded;
  for (auto& entry : Record({Change("r1", 1), Change("r2", 1)})) {
    auto event = cloudevents::DecodeStructuredJson(entry.event);
    ASSERT_TRUE(event.ok());
    recorded.push_back({entry, *event});
  }
  const cloudevents::Event first = *recorded[0].event;
  publisher.FailNext(absl::UnavailableError("broker down"));
  loop_.Post([&] { outbox.Add(std::move(recorded)); });
  RunAll();
  clock_.Advance(std::chrono::seconds(2));
  RunAll();
  ASSERT_EQ(publisher.published().size(), 3U);  // r1 failed, r2, r1 again
  EXPECT_EQ(publisher.published()[0], first);
  EXPECT_EQ(publisher.accepted().size(), 2U);
  EXPECT_EQ(publisher.accepted()[1], first);
  EXPECT_EQ(outbox.pending(), 0U);
}

TEST_F(OutboxTest, EventsOfOneResourceGoOutInOrderOneAtATime) {
  FakePublisher publisher(FakePublisher::Mode::kManual);
  ASSERT_TRUE(publisher.Start().ok());
  Outbox outbox(loop_, workers_, store_, publisher, clock_, metrics_, {});
  auto entries = Record({Change("r1", 1), Change("r2", 1), Change("r1", 2)});
  loop_.Post([&] { outbox.Add(entries); });
  RunAll();
  // r1 v1 and r2 v1 in flight; r1 v2 waits for r1 v1.
  ASSERT_EQ(publisher.pending(), 2);
  ASSERT_TRUE(publisher.CompleteNext());
  RunAll();
  ASSERT_EQ(publisher.published().size(), 3U);
  EXPECT_EQ(publisher.published()[2].ResourceVersion().value(), 2);
  publisher.CompleteAll();
  RunAll();
  EXPECT_EQ(outbox.pending(), 0U);
  EXPECT_TRUE(outbox.WaitDrained(std::chrono::milliseconds(0)));
}

TEST_F(OutboxTest, NoMoreAwaitTheirAcknowledgementThanTheBrokerTakes) {
  FakePublisher publisher(FakePublisher::Mode::kManual);
  ASSERT_TRUE(publisher.Start().ok());
  publisher.SetMaxInFlight(2);  // the broker's Receive Maximum
  OutboxSettings settings;
  settings.max_in_flight = 64;
  Outbox outbox(loop_, workers_, store_, publisher, clock_, metrics_, settings);
  auto entries = Record({Change("r1", 1), Change("r2", 1), Change("r3", 1), Change("r4", 1)});
  loop_.Post([&] { outbox.Add(entries); });
  RunAll();
  EXPECT_EQ(publisher.pending(), 2);
  ASSERT_TRUE(publisher.CompleteNext());
  RunAll();
  EXPECT_EQ(publisher.pending(), 2);
  EXPECT_EQ(publisher.published().size(), 3U);
  publisher.CompleteAll();
  RunAll();
  publisher.CompleteAll();
  RunAll();
  EXPECT_EQ(publisher.accepted().size(), 4U);
  EXPECT_EQ(outbox.pending(), 0U);
}

TEST_F(OutboxTest, EventsLeftByACrashedProcessArePublishedByTheNextOne) {
  auto entries = Record({Change("r1", 1)});
  {
    // First process (its own executors): the broker never acknowledges, then the process dies
    // with the event in flight.
    Loop loop(clock_, "loop1");
    WorkerPool workers(clock_, "workers1", 1);
    FakePublisher publisher(FakePublisher::Mode::kManual);
    ASSERT_TRUE(publisher.Start().ok());
    Outbox outbox(loop, workers, store_, publisher, clock_, metrics_, {});
    loop.Post([&] { outbox.Add(entries); });
    loop.RunUntilIdleForTest();
    EXPECT_EQ(publisher.pending(), 1);
    loop.Stop();
    workers.Stop();
    publisher.Stop();  // its callback is dropped: the loop is gone
  }
  // Next process: recovers the outbox from the store.
  FakePublisher publisher;
  ASSERT_TRUE(publisher.Start().ok());
  Outbox outbox(loop_, workers_, store_, publisher, clock_, metrics_, {});
  auto pending = store_.PendingOutbox(0, 100);
  ASSERT_TRUE(pending.ok());
  ASSERT_EQ(pending->size(), 1U);
  loop_.Post([&] { outbox.Add(*pending); });
  RunAll();
  ASSERT_EQ(publisher.accepted().size(), 1U);
  EXPECT_TRUE(store_.PendingOutbox(0, 10)->empty());
}

TEST_F(OutboxTest, NothingIsPublishedWhileTheTransportIsDisconnected) {
  FakePublisher publisher;
  ASSERT_TRUE(publisher.Start().ok());
  publisher.SetConnected(false);
  Outbox outbox(loop_, workers_, store_, publisher, clock_, metrics_, {});
  auto entries = Record({Change("r1", 1)});
  loop_.Post([&] { outbox.Add(entries); });
  RunAll();
  EXPECT_TRUE(publisher.published().empty());
  EXPECT_EQ(outbox.pending(), 1U);
  publisher.SetConnected(true);
  clock_.Advance(std::chrono::milliseconds(200));
  RunAll();
  ASSERT_EQ(publisher.accepted().size(), 1U);
  EXPECT_EQ(outbox.pending(), 0U);
  EXPECT_EQ(MetricValue(registry_, "mmi_dispatcher_dispatches_total",
                        {{"action", "update"}, {"result", "retry"}}),
            0);
}

TEST_F(OutboxTest, ACreateMaestroAlreadyHasIsResentAsAnUpdate) {
  FakePublisher publisher;
  ASSERT_TRUE(publisher.Start().ok());
  Outbox outbox(loop_, workers_, store_, publisher, clock_, metrics_, {});
  publisher.FailNext(absl::AlreadyExistsError("This Resource already exists"));
  store::DispatchChange change = Change("r1", 1);
  auto event = cloudevents::DecodeStructuredJson(change.event.event).value();
  event.type = std::string(cloudevents::kSpecCreateRequestType);
  change.event.event = cloudevents::EncodeStructuredJson(event).value();
  change.event.action = store::OutboxAction::kCreate;
  auto entries = Record({change});
  loop_.Post([&] { outbox.Add(entries); });
  RunAll();
  ASSERT_EQ(publisher.published().size(), 2U);
  EXPECT_EQ(publisher.published()[0].type, cloudevents::kSpecCreateRequestType);
  ASSERT_EQ(publisher.accepted().size(), 1U);
  EXPECT_EQ(publisher.accepted()[0].type, cloudevents::kSpecUpdateRequestType);
  EXPECT_EQ(outbox.pending(), 0U);
}

TEST_F(OutboxTest, AnEventThatCanNeverBeSentIsDroppedAndCounted) {
  FakePublisher publisher;
  ASSERT_TRUE(publisher.Start().ok());
  Outbox outbox(loop_, workers_, store_, publisher, clock_, metrics_, {});
  publisher.FailNext(absl::InvalidArgumentError("too large"));
  auto entries = Record({Change("r1", 1), Change("r1", 2)});
  loop_.Post([&] { outbox.Add(entries); });
  RunAll();
  ASSERT_EQ(publisher.accepted().size(), 1U);
  EXPECT_EQ(publisher.accepted()[0].ResourceVersion().value(), 2);
  EXPECT_EQ(MetricValue(registry_, "mmi_dispatcher_dispatches_total",
                        {{"action", "update"}, {"result", "dropped"}}),
            1);
  EXPECT_EQ(outbox.pending(), 0U);
}

TEST_F(OutboxTest, OnlyEventsThatLeaveByThemselvesCountAsReadyOrInFlight) {
  FakePublisher publisher;
  ASSERT_TRUE(publisher.Start().ok());
  publisher.SetConnected(false);
  Outbox outbox(loop_, workers_, store_, publisher, clock_, metrics_, {});
  auto entries = Record({Change("r1", 1), Change("r1", 2), Change("r2", 1)});
  loop_.Post([&] { outbox.Add(entries); });
  RunAll();
  // Disconnected: every event waits to be published, r1 v2 behind r1 v1.
  EXPECT_EQ(outbox.ready_or_in_flight(), 3U);
  EXPECT_EQ(outbox.pending(), 3U);

  // r1 v1 fails with a retried error (r1 v2 waits behind it), r2 v1 is accepted and its
  // removal from the store is pending (the worker pool does not run).
  publisher.SetConnected(true);
  publisher.FailNext(absl::FailedPreconditionError("consumer is not registered"));
  clock_.Advance(std::chrono::milliseconds(200));
  loop_.RunUntilIdleForTest();
  ASSERT_EQ(publisher.published().size(), 2U);
  ASSERT_EQ(publisher.accepted().size(), 1U);
  EXPECT_EQ(outbox.ready_or_in_flight(), 0U) << "in retry backoff, or accepted";
  EXPECT_EQ(outbox.pending(), 3U);

  // A later event of r1 waits behind the backoff too; one of another resource does not.
  auto more = Record({Change("r1", 3), Change("r3", 1)});
  publisher.SetConnected(false);
  loop_.Post([&] { outbox.Add(more); });
  loop_.RunUntilIdleForTest();
  EXPECT_EQ(outbox.ready_or_in_flight(), 1U);
  RunAll();
  EXPECT_EQ(outbox.pending(), 4U);

  // The backoff ends: r1's events wait to be published again, then go out in order.
  clock_.Advance(std::chrono::seconds(1));
  loop_.RunQueuedForTest();
  EXPECT_EQ(outbox.ready_or_in_flight(), 4U);
  publisher.SetConnected(true);
  clock_.Advance(std::chrono::seconds(1));
  RunAll();
  EXPECT_EQ(publisher.accepted().size(), 5U);
  EXPECT_EQ(outbox.ready_or_in_flight(), 0U);
  EXPECT_EQ(outbox.pending(), 0U);
}

TEST_F(OutboxTest, TheDrainedHookRunsOnceWhenTheCountIsDownToItsLowWater) {
  FakePublisher publisher(FakePublisher::Mode::kManual);
  ASSERT_TRUE(publisher.Start().ok());
  Outbox outbox(loop_, workers_, store_, publisher, clock_, metrics_, {});
  auto entries = Record({Change("r1", 1), Change("r2", 1), Change("r3", 1), Change("r4", 1)});
  int drained = 0;
  loop_.Post([&] {
    outbox.Add(entries);
    outbox.NotifyWhenDrainedTo(2, [&] { ++drained; });
  });
  RunAll();
  ASSERT_EQ(publisher.pending(), 4);
  EXPECT_EQ(drained, 0);
  ASSERT_TRUE(publisher.CompleteNext());
  RunAll();
  EXPECT_EQ(drained, 0) << "3 left";
  // A failure puts its event in retry backoff: that counts as drained too.
  ASSERT_TRUE(publisher.CompleteNext(absl::UnavailableError("broker away")));
  RunAll();
  EXPECT_EQ(outbox.ready_or_in_flight(), 2U);
  EXPECT_EQ(drained, 1);
  publisher.CompleteAll();
  RunAll();
  EXPECT_EQ(drained, 1) << "forgotten once run";

  // Already at or below the low water: runs at once (posted to the loop).
  loop_.Post([&] { outbox.NotifyWhenDrainedTo(0, [&] { ++drained; }); });
  RunAll();
  EXPECT_EQ(drained, 2);
}

}  // namespace
}  // namespace mmi::dispatcher
