// The contract every DispatchStore passes: instantiate with a factory that returns a fresh, empty
// store (see dispatch_store_contract_test.cc for the fake, tests/integration/store/ for Postgres).
//
//   INSTANTIATE_TEST_SUITE_P(Fake, DispatchStoreContract,
//                            ::testing::Values(DispatchStoreFactory{...}));
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "libs/store/dispatch_store.h"

namespace mmi::store::testing {

struct DispatchStoreFactory {
  std::string name;
  std::function<std::unique_ptr<DispatchStore>()> make;
  // Saves what the sink would for `resource_id` in `resource_status`: the version its agent
  // reported applied, at `reported_at`.
  std::function<void(DispatchStore&, const std::string& resource_id,
                     std::optional<int32_t> acked_version,
                     std::chrono::system_clock::time_point reported_at)>
      seed_ack;
};

inline std::string PrintToString(const DispatchStoreFactory& f) { return f.name; }

class DispatchStoreContract : public ::testing::TestWithParam<DispatchStoreFactory> {
 protected:
  void SetUp() override { store_ = GetParam().make(); }

  static DispatchChange Change(int n, const std::string& cluster, OutboxAction action,
                               int32_t version) {
    char id[40];
    std::snprintf(id, sizeof id, "00000000-0000-5000-8000-%012d", n);
    DispatchChange c;
    c.resource.resource_id = id;
    c.resource.cluster = cluster;
    c.resource.hub_namespace = "argocd";
    c.resource.hub_name = "app-" + std::to_string(n) + "-" + cluster;
    c.resource.hub_uid = "uid-" + std::to_string(n);
    c.resource.work_name = "argocd-" + c.resource.hub_name;
    c.resource.appset_namespace = "argocd";
    c.resource.appset_name = "appset-" + std::to_string(n % 3);
    c.resource.version = version;
    c.resource.payload_hash = "hash-" + std::to_string(version);
    c.resource.payload = R"({"manifests":[{"kind":"Application","it's":"quoted \"json\""}]})";
    c.resource.metadata = R"({"name":"w"})";
    c.event.resource_id = id;
    c.event.cluster = cluster;
    c.event.action = action;
    c.event.version = version;
    c.event.payload_hash = c.resource.payload_hash;
    c.event.event = R"({"specversion":"1.0","id":"e-)" + std::to_string(n) + R"("})";
    return c;
  }

  std::unique_ptr<DispatchStore> store_;
};

TEST_P(DispatchStoreContract, RecordsResourcesAndOutboxEventsInOrder) {
  auto seqs = store_->Record({Change(1, "c1", OutboxAction::kCreate, 0),
                              Change(2, "c1", OutboxAction::kCreate, 0),
                              Change(3, "c2", OutboxAction::kCreate, 0)});
  ASSERT_TRUE(seqs.ok()) << seqs.status();
  ASSERT_EQ(seqs->size(), 3U);
  EXPECT_LT((*seqs)[0], (*seqs)[1]);
  EXPECT_LT((*seqs)[1], (*seqs)[2]);

  auto pending = store_->PendingOutbox(0, 10);
  ASSERT_TRUE(pending.ok()) << pending.status();
  ASSERT_EQ(pending->size(), 3U);
  EXPECT_EQ((*pending)[0].event, Change(1, "c1", OutboxAction::kCreate, 0).event.event);
  EXPECT_EQ((*pending)[2].cluster, "c2");

  auto got = store_->GetResource(Change(2, "c1", OutboxAction::kCreate, 0).resource.resource_id);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_TRUE(got->has_value());
  const DispatchedResource expected = Change(2, "c1", OutboxAction::kCreate, 0).resource;
  EXPECT_EQ((*got)->payload, expected.payload);
  EXPECT_EQ((*got)->appset_name, expected.appset_name);
  EXPECT_EQ((*got)->metadata, expected.metadata);
  EXPECT_FALSE((*got)->last_published_at.has_value());

  auto c1 = store_->ResourcesOfCluster("c1");
  ASSERT_TRUE(c1.ok());
  EXPECT_EQ(c1->size(), 2U);
}

TEST_P(DispatchStoreContract, TheLastChangeOfAResourceInABatchWins) {
  auto seqs = store_->Record(
      {Change(1, "c1", OutboxAction::kCreate, 0), Change(1, "c1", OutboxAction::kUpdate, 1)});
  ASSERT_TRUE(seqs.ok()) << seqs.status();
  EXPECT_EQ(seqs->size(), 2U);
  auto got = store_->GetResource(Change(1, "c1", OutboxAction::kCreate, 0).resource.resource_id);
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ((*got)->version, 1);
}

TEST_P(DispatchStoreContract, PublishedEntriesLeaveTheOutboxAndStampTheResource) {
  auto seqs = store_->Record(
      {Change(1, "c1", OutboxAction::kCreate, 0), Change(2, "c1", OutboxAction::kCreate, 0)});
  ASSERT_TRUE(seqs.ok());
  const auto at = std::chrono::system_clock::time_point(std::chrono::seconds(1'800'000'000)) +
                  std::chrono::microseconds(123456);
  ASSERT_TRUE(store_->MarkPublished({(*seqs)[0]}, at).ok());
  auto pending = store_->PendingOutbox(0, 10);
  ASSERT_TRUE(pending.ok());
  ASSERT_EQ(pending->size(), 1U);
  EXPECT_EQ((*pending)[0].seq, (*seqs)[1]);
  auto got = store_->GetResource(Change(1, "c1", OutboxAction::kCreate, 0).resource.resource_id);
  ASSERT_TRUE(got.ok() && got->has_value());
  ASSERT_TRUE((*got)->last_published_at.has_value());
  EXPECT_EQ(*(*got)->last_published_at, at);

  ASSERT_TRUE(store_->RecordPublishFailure((*seqs)[1], "broker down").ok());
  pending = store_->PendingOutbox((*seqs)[0], 10);
  ASSERT_TRUE(pending.ok());
  ASSERT_EQ(pending->size(), 1U);
  EXPECT_EQ((*pending)[0].attempts, 1);
}

TEST_P(DispatchStoreContract, LoadsTheRowsAndPendingEventsOfSomeApplications) {
  // Application 1 has moved from c1 to c2 (two rows); 2 is published; 3 is asked for by id only;
  // 5 not at all.
  const DispatchChange moved = Change(1, "c1", OutboxAction::kCreate, 0);
  DispatchChange moved_to = Change(4, "c2", OutboxAction::kCreate, 0);
  moved_to.resource.hub_name = moved.resource.hub_name;
  const DispatchChange published = Change(2, "c1", OutboxAction::kCreate, 0);
  const DispatchChange by_id = Change(3, "c1", OutboxAction::kCreate, 0);
  auto seqs =
      store_->Record({moved, published, by_id, moved_to, Change(1, "c1", OutboxAction::kDelete, 1),
                      Change(5, "c1", OutboxAction::kCreate, 0)});
  ASSERT_TRUE(seqs.ok()) << seqs.status();
  ASSERT_TRUE(store_->MarkPublished({(*seqs)[1]}, std::chrono::system_clock::now()).ok());

  auto got = store_->LoadApplications({{"argocd", moved.resource.hub_name},
                                       {"argocd", published.resource.hub_name},
                                       {"argocd", "never-dispatched"},
                                       {"argocd", R"(quoted "name" \ {with,commas})"},
                                       {"other-namespace", moved.resource.hub_name}},
                                      {by_id.resource.resource_id, moved.resource.resource_id,
                                       "00000000-0000-5000-8000-999999999999"});
  ASSERT_TRUE(got.ok()) << got.status();
  std::vector<std::string> ids;
  for (const auto& r : got->resources) {
    ids.push_back(r.resource_id);
    EXPECT_TRUE(r.payload.empty()) << "rows without payload, as ForEachResource";
    EXPECT_TRUE(r.metadata.empty());
  }
  EXPECT_EQ(ids,
            (std::vector<std::string>{moved.resource.resource_id, published.resource.resource_id,
                                      by_id.resource.resource_id, moved_to.resource.resource_id}))
      << "each row once, ascending id";
  // The pending events of those rows in recording order: 2's was published, 5 was not asked for.
  std::vector<int64_t> got_seqs;
  for (const auto& e : got->outbox) {
    got_seqs.push_back(e.seq);
  }
  EXPECT_EQ(got_seqs, (std::vector<int64_t>{(*seqs)[0], (*seqs)[2], (*seqs)[3], (*seqs)[4]}));
  ASSERT_EQ(got->outbox.size(), 4U);
  EXPECT_EQ(got->outbox[3].action, OutboxAction::kDelete);
  EXPECT_EQ(got->outbox[3].event, Change(1, "c1", OutboxAction::kDelete, 1).event.event);

  auto none = store_->LoadApplications({}, {});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->resources.empty() && none->outbox.empty());
}

TEST_P(DispatchStoreContract, WalksEveryResourceAndForgetsDeletedOnes) {
  auto any = store_->HasResources();
  ASSERT_TRUE(any.ok()) << any.status();
  EXPECT_FALSE(*any) << "a new store has no resources";
  std::vector<DispatchChange> changes;
  for (int i = 0; i < 1200; ++i) {
    changes.push_back(Change(i, "c" + std::to_string(i % 7), OutboxAction::kCreate, 0));
  }
  ASSERT_TRUE(store_->Record(changes).ok());
  any = store_->HasResources();
  ASSERT_TRUE(any.ok()) << any.status();
  EXPECT_TRUE(*any);
  int seen = 0;
  int without_payload = 0;
  ASSERT_TRUE(store_
                  ->ForEachResource([&](const DispatchedResource& r) {
                    ++seen;
                    if (r.payload.empty() && r.metadata.empty() && !r.payload_hash.empty() &&
                        !r.hub_name.empty()) {
                      ++without_payload;
                    }
                  })
                  .ok());
  EXPECT_EQ(seen, 1200);
  EXPECT_EQ(without_payload, 1200) << "the warm load's rows carry no payload or metadata";

  const std::string id = changes[5].resource.resource_id;
  auto live = store_->MarkDeletionConfirmed(id);  // live: nothing happens
  ASSERT_TRUE(live.ok()) << live.status();
  EXPECT_FALSE(*live);
  auto got = store_->GetResource(id);
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ((*got)->deletion_state, DeletionState::kLive);
  DispatchChange deleting = changes[5];
  deleting.resource.deletion_state = DeletionState::kDeleteRequested;
  deleting.event.action = OutboxAction::kDelete;
  deleting.resource.version = deleting.event.version = 1;
  ASSERT_TRUE(store_->Record({deleting}).ok());
  auto confirmed = store_->MarkDeletionConfirmed(id);
  ASSERT_TRUE(confirmed.ok()) << confirmed.status();
  EXPECT_TRUE(*confirmed);
  got = store_->GetResource(id);
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ((*got)->deletion_state, DeletionState::kDeleteConfirmed);
  ASSERT_TRUE(store_->Forget(id).ok());
  got = store_->GetResource(id);
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE(got->has_value());
  auto pending = store_->PendingOutbox(0, 5000);
  ASSERT_TRUE(pending.ok());
  EXPECT_EQ(pending->size(), 1199U);
}

TEST_P(DispatchStoreContract, ListsConfirmedDeletionsForTheSweep) {
  const auto deleting = [](int n, const std::string& cluster) {
    DispatchChange c = Change(n, cluster, OutboxAction::kDelete, 2);
    c.resource.deletion_state = DeletionState::kDeleteRequested;
    return c;
  };
  ASSERT_TRUE(store_
                  ->Record({deleting(3, "c1"), deleting(1, "c1"),
                            Change(2, "c2", OutboxAction::kCreate, 1)})
                  .ok());
  auto none = store_->ConfirmedDeletions();
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(none->empty());

  const std::string id1 = Change(1, "c1", OutboxAction::kCreate, 1).resource.resource_id;
  const std::string id3 = Change(3, "c1", OutboxAction::kCreate, 1).resource.resource_id;
  EXPECT_EQ(store_->MarkDeletionConfirmed(id3).value_or(false), true);
  EXPECT_EQ(store_->MarkDeletionConfirmed(id1).value_or(false), true);
  EXPECT_EQ(store_->MarkDeletionConfirmed(id1).value_or(false), true);  // idempotent
  const std::string id9 = Change(9, "c1", OutboxAction::kCreate, 1).resource.resource_id;
  EXPECT_EQ(store_->MarkDeletionConfirmed(id9).value_or(true), false);  // unknown: not confirmed
  const std::string id2 = Change(2, "c2", OutboxAction::kCreate, 1).resource.resource_id;
  EXPECT_EQ(store_->MarkDeletionConfirmed(id2).value_or(true), false);  // live: stays live
  auto live = store_->GetResource(id2);
  ASSERT_TRUE(live.ok() && live->has_value());
  EXPECT_EQ((*live)->deletion_state, DeletionState::kLive);
  auto confirmed = store_->ConfirmedDeletions();
  ASSERT_TRUE(confirmed.ok()) << confirmed.status();
  EXPECT_EQ(*confirmed, (std::vector<std::string>{id1, id3}));

  ASSERT_TRUE(store_->Forget(id1).ok());
  confirmed = store_->ConfirmedDeletions();
  ASSERT_TRUE(confirmed.ok()) << confirmed.status();
  EXPECT_EQ(*confirmed, (std::vector<std::string>{id3}));
}

// A resend of the delete request recorded after the agent's confirmation (the reconciler records
// the resend, the confirmation lands before its Finish): the row stays confirmed, so a crash
// before the finalizer is released still finds it in ConfirmedDeletions() at the next start.
TEST_P(DispatchStoreContract, AResentDeleteRecordedAfterTheConfirmationKeepsItConfirmed) {
  DispatchChange resend = Change(4, "c1", OutboxAction::kDelete, 2);
  resend.resource.deletion_state = DeletionState::kDeleteRequested;
  const std::string id = resend.resource.resource_id;
  ASSERT_TRUE(store_->Record({resend}).ok());
  EXPECT_EQ(store_->MarkDeletionConfirmed(id).value_or(false), true);
  ASSERT_TRUE(store_->Record({resend}).ok());

  auto row = store_->GetResource(id);
  ASSERT_TRUE(row.ok() && row->has_value());
  EXPECT_EQ((*row)->deletion_state, DeletionState::kDeleteConfirmed);
  auto confirmed = store_->ConfirmedDeletions();
  ASSERT_TRUE(confirmed.ok()) << confirmed.status();
  EXPECT_EQ(*confirmed, (std::vector<std::string>{id}));

  // A live record (the Application back under the same id once the deletion is forgotten) is a
  // new life: Forget, then Record live.
  ASSERT_TRUE(store_->Forget(id).ok());
  DispatchChange back = Change(4, "c1", OutboxAction::kCreate, 3);
  ASSERT_TRUE(store_->Record({back}).ok());
  row = store_->GetResource(id);
  ASSERT_TRUE(row.ok() && row->has_value());
  EXPECT_EQ((*row)->deletion_state, DeletionState::kLive);
}

// Manifest delivery (migrations/0003): a bundle's render row is written with its resource row;
// a render that changes no bundle (a new revision with the same output, an error) on its own;
// Forget removes it. Resources delivered as Applications have none.
TEST_P(DispatchStoreContract, KeepsTheManifestRenderOfAResourceUntilItIsForgotten) {
  DispatchChange app = Change(5, "c1", OutboxAction::kCreate, 1);
  DispatchChange bundle = Change(6, "c1", OutboxAction::kCreate, 1);
  const std::string id = bundle.resource.resource_id;
  bundle.manifest_render = ManifestRender{.resource_id = id,
                                          .revision = "sha-1",
                                          .source_type = "Kustomize",
                                          .render_error = std::nullopt};
  ASSERT_TRUE(store_->Record({app, bundle}).ok());
  auto none = store_->GetManifestRender(app.resource.resource_id);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_FALSE(none->has_value());
  auto got = store_->GetManifestRender(id);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, bundle.manifest_render);

  // The next commit fails to render: the error joins the row, the revision stays.
  const ManifestRender failed{.resource_id = id,
                              .revision = "sha-1",
                              .source_type = "Kustomize",
                              .render_error = "kustomize build: it's \"broken\""};
  ASSERT_TRUE(store_->PutManifestRender(failed).ok());
  got = store_->GetManifestRender(id);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, failed);
  // The fix renders the same bundle at a new revision: the row alone, error cleared.
  const ManifestRender fixed{.resource_id = id,
                             .revision = "sha-3",
                             .source_type = "Kustomize",
                             .render_error = std::nullopt};
  ASSERT_TRUE(store_->PutManifestRender(fixed).ok());
  got = store_->GetManifestRender(id);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, fixed);
  EXPECT_EQ(store_->PutManifestRender(ManifestRender{}).code(), absl::StatusCode::kInvalidArgument);

  ASSERT_TRUE(store_->Forget(id).ok());
  got = store_->GetManifestRender(id);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_FALSE(got->has_value());
}

// A resource switched from manifest delivery back to Application delivery (the annotation
// removed): the Application's update removes the render row, so the sink maps its status as an
// Application's; a delete request keeps it; within one batch the last change counts.
TEST_P(DispatchStoreContract, AnApplicationUpdateEndsManifestDelivery) {
  DispatchChange bundle = Change(7, "c1", OutboxAction::kCreate, 1);
  const std::string id = bundle.resource.resource_id;
  bundle.manifest_render = ManifestRender{
      .resource_id = id, .revision = "sha-1", .source_type = "", .render_error = std::nullopt};
  ASSERT_TRUE(store_->Record({bundle}).ok());
  DispatchChange deleting = Change(7, "c1", OutboxAction::kDelete, 2);
  deleting.resource.deletion_state = DeletionState::kDeleteRequested;
  ASSERT_TRUE(store_->Record({deleting}).ok());
  auto got = store_->GetManifestRender(id);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, bundle.manifest_render) << "a delete request keeps the render row";

  DispatchChange application = Change(7, "c1", OutboxAction::kUpdate, 3);
  ASSERT_TRUE(store_->Record({application}).ok());
  got = store_->GetManifestRender(id);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_FALSE(got->has_value());

  // Rendered and then sent as an Application in one batch: no row; the other way round: a row.
  DispatchChange rendered = Change(7, "c1", OutboxAction::kUpdate, 4);
  rendered.manifest_render = bundle.manifest_render;
  DispatchChange as_app = Change(7, "c1", OutboxAction::kUpdate, 5);
  ASSERT_TRUE(store_->Record({rendered, as_app}).ok());
  got = store_->GetManifestRender(id);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_FALSE(got->has_value());
  DispatchChange rendered_again = Change(7, "c1", OutboxAction::kUpdate, 7);
  rendered_again.manifest_render = bundle.manifest_render;
  ASSERT_TRUE(store_->Record({Change(7, "c1", OutboxAction::kUpdate, 6), rendered_again}).ok());
  got = store_->GetManifestRender(id);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, bundle.manifest_render);
}

TEST_P(DispatchStoreContract, ListsWhatAReportingAgentHasNotAcknowledged) {
  using std::chrono::seconds;
  const auto t0 = std::chrono::system_clock::time_point(seconds(1'790'000'000));
  const std::vector<DispatchChange> changes = {
      Change(1, "c1", OutboxAction::kCreate, 1), Change(2, "c1", OutboxAction::kCreate, 1),
      Change(3, "c1", OutboxAction::kCreate, 1), Change(4, "c2", OutboxAction::kCreate, 2)};
  auto seqs = store_->Record(changes);
  ASSERT_TRUE(seqs.ok()) << seqs.status();
  ASSERT_TRUE(store_->MarkPublished({(*seqs)[0], (*seqs)[3]}, t0).ok());
  ASSERT_TRUE(store_->MarkPublished({(*seqs)[1], (*seqs)[2]}, t0 + seconds(60)).ok());
  const auto id = [&](int i) { return changes[i].resource.resource_id; };
  // c1: the change published 60 s after the first one is applied, the first never was; the
  // third, published with the second, is within its grace. c2: the agent reports an older
  // version 400 s after the publish.
  GetParam().seed_ack(*store_, id(1), 1, t0 + seconds(70));
  GetParam().seed_ack(*store_, id(3), 1, t0 + seconds(400));
  const AckWindow window{.grace = seconds(30), .timeout = seconds(300), .limit = 10};

  auto got = store_->UnacknowledgedResources(window);
  ASSERT_TRUE(got.ok()) << got.status();
  // The overtaken one first; the progress is id(1), the only acknowledged version.
  EXPECT_EQ(*got, (AckSnapshot{.resources = {{.resource_id = id(0),
                                              .version = 1,
                                              .acked_version = std::nullopt,
                                              .published_at = t0,
                                              .overtaken = true},
                                             {.resource_id = id(3),
                                              .version = 2,
                                              .acked_version = 1,
                                              .published_at = t0,
                                              .overtaken = false}},
                               .acked_frontier = t0 + seconds(60),
                               .acknowledged = 1}));

  // A limit of one keeps the overtaken; a change waiting in the outbox is not listed (it has not
  // been sent yet); an acknowledgement of the version ends it and moves the progress.
  auto one =
      store_->UnacknowledgedResources({.grace = seconds(30), .timeout = seconds(300), .limit = 1});
  ASSERT_TRUE(one.ok()) << one.status();
  ASSERT_EQ(one->resources.size(), 1U);
  EXPECT_EQ(one->resources.front().resource_id, id(0));
  ASSERT_TRUE(store_->Record({Change(4, "c2", OutboxAction::kUpdate, 3)}).ok());
  GetParam().seed_ack(*store_, id(0), 1, t0 + seconds(80));
  got = store_->UnacknowledgedResources(window);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(got->resources.empty()) << got->resources.size();
  EXPECT_EQ(got->acked_frontier, t0 + seconds(60));
  EXPECT_EQ(got->acknowledged, 2);

  // Forgetting a resource drops its acknowledgement: the same id dispatched again starts over.
  ASSERT_TRUE(store_->Forget(id(0)).ok());
  seqs = store_->Record({Change(1, "c1", OutboxAction::kCreate, 1)});
  ASSERT_TRUE(seqs.ok()) << seqs.status();
  ASSERT_TRUE(store_->MarkPublished(*seqs, t0).ok());
  got = store_->UnacknowledgedResources(window);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->resources, (std::vector<UnacknowledgedResource>{{.resource_id = id(0),
                                                                  .version = 1,
                                                                  .acked_version = std::nullopt,
                                                                  .published_at = t0,
                                                                  .overtaken = true}}));
  EXPECT_EQ(got->acknowledged, 1);
}

TEST_P(DispatchStoreContract, AnEmptyAckLookUpStillReportsNoProgress) {
  auto got = store_->UnacknowledgedResources({});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, AckSnapshot{});
}

TEST_P(DispatchStoreContract, ListsTheHandOversWhoseFirstStepIsAcknowledged) {
  using std::chrono::seconds;
  const auto t0 = std::chrono::system_clock::time_point(seconds(1'790'000'000));
  // 1 releases its Application (acknowledged), 2 orphans its manifests (not acknowledged yet),
  // 3 orphans them and is acknowledged, 4 is in manifest delivery (no hand-over), 5 released
  // its Application but is being deleted.
  std::vector<DispatchChange> changes = {
      Change(1, "c1", OutboxAction::kUpdate, 2), Change(2, "c1", OutboxAction::kUpdate, 5),
      Change(3, "c2", OutboxAction::kUpdate, 3), Change(4, "c2", OutboxAction::kUpdate, 1),
      Change(5, "c2", OutboxAction::kUpdate, 4)};
  changes[0].resource.delivery = Delivery::kReleasingApplication;
  changes[1].resource.delivery = Delivery::kOrphaningManifests;
  changes[2].resource.delivery = Delivery::kOrphaningManifests;
  changes[3].resource.delivery = Delivery::kManifests;
  changes[4].resource.delivery = Delivery::kReleasingApplication;
  changes[4].resource.deletion_state = DeletionState::kDeleteRequested;
  ASSERT_TRUE(store_->Record(changes).ok());
  const auto id = [&](int i) { return changes[i].resource.resource_id; };
  GetParam().seed_ack(*store_, id(0), 2, t0);
  GetParam().seed_ack(*store_, id(1), 4, t0);
  GetParam().seed_ack(*store_, id(2), 7, t0);
  GetParam().seed_ack(*store_, id(3), 1, t0);
  GetParam().seed_ack(*store_, id(4), 4, t0);

  auto got = store_->AcknowledgedHandovers(10);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got,
            (std::vector<AcknowledgedHandover>{
                {.resource_id = id(0), .version = 2, .delivery = Delivery::kReleasingApplication},
                {.resource_id = id(2), .version = 3, .delivery = Delivery::kOrphaningManifests}}));
  got = store_->AcknowledgedHandovers(1);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 1U);
  EXPECT_EQ(got->front().resource_id, id(0));

  // The delivery survives the store (a restarted dispatcher resumes the hand-over), and the
  // second step ends it.
  auto row = store_->GetResource(id(1));
  ASSERT_TRUE(row.ok()) << row.status();
  ASSERT_TRUE(row->has_value());
  EXPECT_EQ((*row)->delivery, Delivery::kOrphaningManifests);
  std::vector<Delivery> walked;
  ASSERT_TRUE(store_
                  ->ForEachResource([&](const DispatchedResource& r) {
                    if (r.resource_id == id(0)) {
                      walked.push_back(r.delivery);
                    }
                  })
                  .ok());
  EXPECT_EQ(walked, std::vector<Delivery>{Delivery::kReleasingApplication});
  DispatchChange second = Change(1, "c1", OutboxAction::kUpdate, 3);
  second.resource.delivery = Delivery::kManifests;
  ASSERT_TRUE(store_->Record({second}).ok());
  got = store_->AcknowledgedHandovers(10);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 1U);
  EXPECT_EQ(got->front().resource_id, id(2));
}

}  // namespace mmi::store::testing
