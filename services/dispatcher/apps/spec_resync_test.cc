#include "services/dispatcher/apps/spec_resync.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "libs/cloudevents/resync.h"
#include "libs/common/testing/fake_clock.h"
#include "libs/store/testing/fake_dispatch_store.h"
#include "libs/transport/testing/fake_publisher.h"
#include "libs/transport/testing/metric_value.h"
#include "prometheus/registry.h"

namespace mmi::dispatcher {
namespace {

constexpr char kLive[] = "00000000-0000-5000-8000-000000000001";
constexpr char kCurrent[] = "00000000-0000-5000-8000-000000000002";
constexpr char kDeleting[] = "00000000-0000-5000-8000-000000000003";
constexpr char kOrphan[] = "00000000-0000-5000-8000-000000000009";

store::DispatchChange Row(const std::string& id, int32_t version, store::DeletionState state) {
  store::DispatchChange c;
  c.resource.resource_id = id;
  c.resource.cluster = "cluster1";
  c.resource.hub_namespace = "argocd";
  c.resource.hub_name = "app-" + id.substr(id.size() - 1);
  c.resource.work_name = "argocd-" + c.resource.hub_name;
  c.resource.version = version;
  c.resource.payload_hash = "h";
  c.resource.payload = R"({"manifests":[{"apiVersion":"v1","kind":"ConfigMap"}]})";
  c.resource.metadata = R"({"name":"w"})";
  c.resource.deletion_state = state;
  c.event.resource_id = id;
  c.event.cluster = "cluster1";
  c.event.version = version;
  c.event.payload_hash = "h";
  c.event.event = "{}";
  return c;
}

cloudevents::Event Request(const std::string& original_source) {
  cloudevents::Event e;
  e.id = "req-1";
  e.source = "cluster1-work-agent";
  e.type = std::string(cloudevents::kSpecResyncRequestType);
  e.SetString(cloudevents::kExtClusterName, "cluster1");
  e.SetString(cloudevents::kExtOriginalSource, original_source);
  cloudevents::ResourceVersionList list;
  list.resource_versions = {{kLive, 1}, {kCurrent, 4}, {kOrphan, 7}};
  e.data_content_type = "application/json";
  e.data = cloudevents::EncodeResourceVersionList(list).value();
  return e;
}

const cloudevents::Event* ById(const std::vector<cloudevents::Event>& events,
                               const std::string& id) {
  for (const auto& e : events) {
    if (e.ResourceId().value_or("") == id) {
      return &e;
    }
  }
  return nullptr;
}

TEST(SpecResyncTest, AnswersNewerSpecsDeletionsAndOrphans) {
  std::vector<store::DispatchedResource> rows = {
      Row(kLive, 3, store::DeletionState::kLive).resource,
      Row(kCurrent, 4, store::DeletionState::kLive).resource,
      Row(kDeleting, 2, store::DeletionState::kDeleteRequested).resource};
  int ids = 0;
  auto responses =
      BuildSpecResyncResponses("app-work-client", Request(""), rows, cloudevents::Timestamp{},
                               [&] { return "id-" + std::to_string(++ids); });
  ASSERT_TRUE(responses.ok()) << responses.status();
  ASSERT_EQ(responses->size(), 3U);

  const auto* live = ById(*responses, kLive);
  ASSERT_NE(live, nullptr);
  EXPECT_EQ(live->type, cloudevents::kSpecResyncResponseType);
  EXPECT_EQ(live->ResourceVersion().value(), 3);
  EXPECT_EQ(live->data, rows[0].payload);
  EXPECT_EQ(live->MetadataJson().value(), rows[0].metadata);
  EXPECT_FALSE(live->HasExtension(cloudevents::kExtDeletionTimestamp));
  EXPECT_EQ(live->ClusterName().value(), "cluster1");

  EXPECT_EQ(ById(*responses, kCurrent), nullptr);  // agent already at version 4

  const auto* deleting = ById(*responses, kDeleting);
  ASSERT_NE(deleting, nullptr);
  EXPECT_TRUE(deleting->HasExtension(cloudevents::kExtDeletionTimestamp));
  EXPECT_FALSE(deleting->data.has_value());

  const auto* orphan = ById(*responses, kOrphan);
  ASSERT_NE(orphan, nullptr);
  EXPECT_TRUE(orphan->HasExtension(cloudevents::kExtDeletionTimestamp));
  EXPECT_EQ(orphan->ResourceVersion().value(), 7);
  EXPECT_FALSE(orphan->data.has_value());
}

TEST(SpecResyncTest, IgnoresRequestsForOtherSources) {
  EXPECT_TRUE(IsSpecResyncRequestFor(Request(""), "app-work-client"));
  EXPECT_TRUE(IsSpecResyncRequestFor(Request("app-work-client"), "app-work-client"));
  EXPECT_FALSE(IsSpecResyncRequestFor(Request("maestro"), "app-work-client"));
  cloudevents::Event status = Request("");
  status.type = std::string(cloudevents::kStatusUpdateRequestType);
  EXPECT_FALSE(IsSpecResyncRequestFor(status, "app-work-client"));
}

TEST(SpecResyncTest, TheResponderAnswersFromTheStore) {
  mmi::testing::FakeClock clock;
  WorkerPool workers(clock, "workers", 1);
  store::testing::FakeDispatchStore store;
  ASSERT_TRUE(store
                  .Record({Row(kLive, 3, store::DeletionState::kLive),
                           Row(kCurrent, 4, store::DeletionState::kLive)})
                  .ok());
  transport::testing::FakePublisher publisher;
  ASSERT_TRUE(publisher.Start().ok());
  prometheus::Registry registry;
  DispatcherMetrics metrics(registry, "fake");
  SpecResyncResponder responder("app-work-client", workers, store, publisher, clock, metrics);

  int acks = 0;
  responder.Handle(Request(""), [&] { ++acks; });
  EXPECT_EQ(acks, 0);  // the store read runs on the worker pool
  workers.RunUntilIdleForTest();
  EXPECT_EQ(acks, 1);
  // kLive (newer than the agent's 1) and the orphan; kCurrent is up to date.
  ASSERT_EQ(publisher.accepted().size(), 2U);
  EXPECT_NE(ById(publisher.accepted(), kLive), nullptr);
  EXPECT_NE(ById(publisher.accepted(), kOrphan), nullptr);

  responder.Handle(Request("maestro"), [&] { ++acks; });
  workers.RunUntilIdleForTest();
  EXPECT_EQ(acks, 2);
  EXPECT_EQ(publisher.accepted().size(), 2U);
}

TEST(SpecResyncTest, AReplaySendsTheCurrentSpecsOfTheListedResourcesOnly) {
  mmi::testing::FakeClock clock;
  WorkerPool workers(clock, "workers", 1);
  store::testing::FakeDispatchStore store;
  ASSERT_TRUE(store
                  .Record({Row(kLive, 3, store::DeletionState::kLive),
                           Row(kCurrent, 4, store::DeletionState::kLive),
                           Row(kDeleting, 2, store::DeletionState::kDeleteRequested)})
                  .ok());
  transport::testing::FakePublisher publisher;
  ASSERT_TRUE(publisher.Start().ok());
  prometheus::Registry registry;
  DispatcherMetrics metrics(registry, "fake");
  SpecResyncResponder responder("app-work-client", workers, store, publisher, clock, metrics);

  // kCurrent was accepted lately too, but an agent at its version takes it as a no-op: sent.
  // kOrphan is no longer in the store (its deletion was confirmed): nothing to send.
  responder.Replay({{"cluster1", {kLive, kCurrent, kDeleting, kOrphan}}});
  workers.RunUntilIdleForTest();

  const std::vector<cloudevents::Event> sent = publisher.accepted();
  ASSERT_EQ(sent.size(), 3U);
  const auto* live = ById(sent, kLive);
  ASSERT_NE(live, nullptr);
  EXPECT_EQ(live->type, cloudevents::kSpecResyncResponseType);
  EXPECT_EQ(live->ResourceVersion().value(), 3);
  EXPECT_EQ(live->data, R"({"manifests":[{"apiVersion":"v1","kind":"ConfigMap"}]})");
  ASSERT_NE(ById(sent, kCurrent), nullptr);
  EXPECT_EQ(ById(sent, kCurrent)->ResourceVersion().value(), 4);
  ASSERT_NE(ById(sent, kDeleting), nullptr);
  EXPECT_TRUE(ById(sent, kDeleting)->HasExtension(cloudevents::kExtDeletionTimestamp));
  EXPECT_EQ(ById(sent, kOrphan), nullptr);
}

// A deletion decided after the answers were built (the dispatcher restarted: the agent's queued
// request is answered while the reconciler finds the Applications deleted meanwhile) turns the
// spec answer into a delete answer: the agent must never get the spec after the delete request.
TEST(SpecResyncTest, AResourceWhoseDeletionWasDecidedMeanwhileIsAnsweredAsDeleting) {
  mmi::testing::FakeClock clock;
  WorkerPool workers(clock, "workers", 1);
  store::testing::FakeDispatchStore store;
  ASSERT_TRUE(store.Record({Row(kLive, 3, store::DeletionState::kLive)}).ok());
  transport::testing::FakePublisher publisher;
  ASSERT_TRUE(publisher.Start().ok());
  prometheus::Registry registry;
  DispatcherMetrics metrics(registry, "fake");
  SpecResyncResponder responder(
      "app-work-client", workers, store, publisher, clock, metrics,
      [](const std::string& id) { return id == kLive; });  // decided after the store read

  responder.Handle(Request(""), [] {});
  workers.RunUntilIdleForTest();
  const std::vector<cloudevents::Event> accepted = publisher.accepted();
  const cloudevents::Event* answer = ById(accepted, kLive);
  ASSERT_NE(answer, nullptr);
  EXPECT_EQ(answer->type, cloudevents::kSpecResyncResponseType);
  EXPECT_FALSE(answer->data.has_value()) << "no spec";
  EXPECT_TRUE(answer->DeletionTimestamp().ok());
  EXPECT_FALSE(answer->HasExtension(cloudevents::kExtMetadata));
  EXPECT_EQ(transport::testing::MetricValue(registry, "mmi_dispatcher_spec_resync_requests_total",
                                            {{"result", "answered_as_deleting"}}),
            1);
}

TEST(SpecResyncTest, AnAnswerTheBrokerRefusedIsSentAgain) {
  mmi::testing::FakeClock clock;
  WorkerPool workers(clock, "workers", 1);
  store::testing::FakeDispatchStore store;
  ASSERT_TRUE(store.Record({Row(kLive, 3, store::DeletionState::kLive)}).ok());
  transport::testing::FakePublisher publisher;
  ASSERT_TRUE(publisher.Start().ok());
  prometheus::Registry registry;
  DispatcherMetrics metrics(registry, "fake");
  SpecResyncResponder responder("app-work-client", workers, store, publisher, clock, metrics);

  // The first two attempts time out; the third is accepted.
  publisher.FailNext(absl::DeadlineExceededError("no PUBACK"));
  publisher.FailNext(absl::DeadlineExceededError("no PUBACK"));
  responder.Handle(Request(""), [] {});
  workers.RunUntilIdleForTest();
  // Not at once: after the retry delay.
  EXPECT_LT(publisher.accepted().size(), 3U);
  for (int i = 0; i < SpecResyncResponder::kMaxAttempts; ++i) {
    clock.Advance(SpecResyncResponder::kMaxRetryDelay);
    workers.RunUntilIdleForTest();
  }
  EXPECT_NE(ById(publisher.accepted(), kLive), nullptr);
  EXPECT_NE(ById(publisher.accepted(), kOrphan), nullptr);
  // kLive (newer), and the two IDs the store does not know (kCurrent, kOrphan): deletes.
  EXPECT_EQ(publisher.accepted().size(), 3U);
  EXPECT_EQ(publisher.published().size(), 5U);
}

TEST(SpecResyncTest, AnAnswerIsDroppedAfterTheLastAttempt) {
  mmi::testing::FakeClock clock;
  WorkerPool workers(clock, "workers", 1);
  store::testing::FakeDispatchStore store;
  transport::testing::FakePublisher publisher;
  ASSERT_TRUE(publisher.Start().ok());
  prometheus::Registry registry;
  DispatcherMetrics metrics(registry, "fake");
  SpecResyncResponder responder("app-work-client", workers, store, publisher, clock, metrics);

  // The store is empty: the three IDs the agent holds are answered with deletes; every
  // attempt of each fails.
  for (int i = 0; i < 3 * SpecResyncResponder::kMaxAttempts; ++i) {
    publisher.FailNext(absl::UnavailableError("disconnected"));
  }
  responder.Handle(Request(""), [] {});
  workers.RunUntilIdleForTest();
  for (int i = 0; i < SpecResyncResponder::kMaxAttempts; ++i) {
    clock.Advance(SpecResyncResponder::kMaxRetryDelay);
    workers.RunUntilIdleForTest();
  }
  EXPECT_TRUE(publisher.accepted().empty());
  EXPECT_EQ(publisher.published().size(),
            static_cast<size_t>(3 * SpecResyncResponder::kMaxAttempts));
  EXPECT_EQ(publisher.pending(), 0);
}

TEST(SpecResyncTest, RetriesWaitLongerEachTimeAndStopOnShutdown) {
  EXPECT_EQ(SpecResyncResponder::RetryDelay(1), std::chrono::milliseconds(200));
  EXPECT_EQ(SpecResyncResponder::RetryDelay(2), std::chrono::milliseconds(400));
  EXPECT_EQ(SpecResyncResponder::RetryDelay(7), SpecResyncResponder::kMaxRetryDelay);

  mmi::testing::FakeClock clock;
  WorkerPool workers(clock, "workers", 1);
  store::testing::FakeDispatchStore store;
  transport::testing::FakePublisher publisher;
  ASSERT_TRUE(publisher.Start().ok());
  prometheus::Registry registry;
  DispatcherMetrics metrics(registry, "fake");
  SpecResyncResponder responder("app-work-client", workers, store, publisher, clock, metrics);
  // A stopped publisher: each of the three answers is tried once, never again.
  for (int i = 0; i < 3; ++i) {
    publisher.FailNext(absl::FailedPreconditionError("publisher stopped"));
  }
  responder.Handle(Request(""), [] {});
  workers.RunUntilIdleForTest();
  clock.Advance(std::chrono::minutes(5));
  workers.RunUntilIdleForTest();
  EXPECT_EQ(publisher.published().size(), 3U);
  EXPECT_EQ(workers.Pending(), 0U);
}

TEST(SpecResyncTest, AtMostAWindowOfAnswersIsWithTheBroker) {
  mmi::testing::FakeClock clock;
  WorkerPool workers(clock, "workers", 1);
  store::testing::FakeDispatchStore store;
  constexpr int kRows = SpecResyncResponder::kMaxInFlight + 44;
  std::vector<store::DispatchChange> rows;
  for (int i = 0; i < kRows; ++i) {
    char id[40];
    std::snprintf(id, sizeof(id), "00000000-0000-5000-8000-1%011d", i);
    rows.push_back(Row(id, 2, store::DeletionState::kLive));
  }
  ASSERT_TRUE(store.Record(rows).ok());
  transport::testing::FakePublisher publisher(transport::testing::FakePublisher::Mode::kManual);
  ASSERT_TRUE(publisher.Start().ok());
  prometheus::Registry registry;
  DispatcherMetrics metrics(registry, "fake");
  SpecResyncResponder responder("app-work-client", workers, store, publisher, clock, metrics);

  responder.Handle(Request(""), [] {});
  workers.RunUntilIdleForTest();
  EXPECT_EQ(publisher.pending(), SpecResyncResponder::kMaxInFlight);
  // Completions let more answers out, until all (plus the agent's three unknown IDs) are
  // accepted.
  while (publisher.CompleteAll() > 0) {
    workers.RunUntilIdleForTest();
    EXPECT_LE(publisher.pending(), SpecResyncResponder::kMaxInFlight);
  }
  EXPECT_EQ(publisher.accepted().size(), static_cast<size_t>(kRows + 3));
}

}  // namespace
}  // namespace mmi::dispatcher
