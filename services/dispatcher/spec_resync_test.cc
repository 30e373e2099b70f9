#include "services/dispatcher/spec_resync.h"

#include <gtest/gtest.h>

#include "libs/cloudevents/resync.h"
#include "libs/common/testing/fake_clock.h"
#include "libs/store/testing/fake_dispatch_store.h"
#include "libs/transport/testing/fake_publisher.h"
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
  internal::Executor workers(clock, "workers", 0);
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

}  // namespace
}  // namespace mmi::dispatcher
