// The contract every StatusStore passes: instantiate with a factory that returns a fresh, empty
// store plus a way to seed dispatched resources (what the dispatcher would have recorded). See
// fake_status_store_test.cc for the fake, tests/integration/store/ for Postgres.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "libs/store/status_store.h"

namespace mmi::store::testing {

struct StatusStoreUnderTest {
  std::unique_ptr<StatusStore> store;
  // Records a dispatched resource (a dispatched_resources row).
  std::function<void(const HubAppRef&)> seed;
  // Records a dispatched resource with its payload, version and publication time, and, for a
  // `manifest` one, its manifest_renders row (written after every applied status saved so far).
  std::function<void(const HubAppRef&, const std::string& payload)> seed_with_payload;
};

struct StatusStoreFactory {
  std::string name;
  std::function<StatusStoreUnderTest()> make;
};

inline std::string PrintToString(const StatusStoreFactory& f) { return f.name; }

class StatusStoreContract : public ::testing::TestWithParam<StatusStoreFactory> {
 protected:
  void SetUp() override {
    auto made = GetParam().make();
    store_ = std::move(made.store);
    seed_ = std::move(made.seed);
    seed_with_payload_ = std::move(made.seed_with_payload);
  }

  static std::string Id(int n) {
    char id[40];
    std::snprintf(id, sizeof id, "00000000-0000-5000-8000-%012d", n);
    return id;
  }

  static HubAppRef Ref(int n, const std::string& cluster, bool with_appset = true) {
    HubAppRef r;
    r.resource_id = Id(n);
    r.cluster = cluster;
    r.hub_namespace = "argocd";
    r.hub_name = "app-" + std::to_string(n) + "-" + cluster;
    if (with_appset) {
      r.appset_namespace = "argocd";
      r.appset_name = "appset-" + std::to_string(n % 2);
    }
    return r;
  }

  static AppliedStatus Applied(int n, const std::string& sync, const std::string& health) {
    AppliedStatus s;
    s.resource_id = Id(n);
    s.last_sequence_id = 2000808179721572352 + n;
    s.status_hash = "status-" + std::to_string(n);
    s.material_hash = "material-" + std::to_string(n);
    s.sync_status = sync;
    s.health_status = health;
    s.appset_namespace = "argocd";
    s.appset_name = "appset-" + std::to_string(n % 2);
    s.volatile_written_at =
        std::chrono::system_clock::time_point(std::chrono::seconds(1'800'000'000)) +
        std::chrono::microseconds(250);
    return s;
  }

  static HubAppRef ManifestRef(int n, const std::string& cluster,
                               std::optional<std::string> render_error = std::nullopt) {
    HubAppRef r = Ref(n, cluster);
    ManifestRenderRef m;
    m.revision = "rev-" + std::to_string(n);
    m.source_type = "Kustomize";
    m.render_error = std::move(render_error);
    m.payload_hash = "payload-hash-" + std::to_string(n % 2);
    m.version = 3;
    // Microseconds: what timestamptz keeps.
    m.last_published_at =
        std::chrono::system_clock::time_point(std::chrono::seconds(1'800'000'000)) +
        std::chrono::microseconds(125);
    r.manifest = std::move(m);
    return r;
  }

  static std::string Payload(int n) {
    return "{\"manifests\":[{\"kind\":\"ConfigMap\",\"n\":" + std::to_string(n) + "}]}";
  }

  // Sorted by resource id.
  std::vector<std::pair<std::string, std::string>> StaleRenders() {
    std::vector<std::pair<std::string, std::string>> out;
    EXPECT_TRUE(store_
                    ->ForEachStaleManifestRender([&](const std::string& id, const std::string& c) {
                      out.emplace_back(id, c);
                    })
                    .ok());
    std::sort(out.begin(), out.end());
    return out;
  }

  std::unique_ptr<StatusStore> store_;
  std::function<void(const HubAppRef&)> seed_;
  std::function<void(const HubAppRef&, const std::string&)> seed_with_payload_;
};

TEST_P(StatusStoreContract, LookupCarriesTheManifestRenderOfResourcesInManifestDelivery) {
  seed_with_payload_(ManifestRef(1, "c1"), Payload(1));
  seed_with_payload_(ManifestRef(2, "c2", "rpc error: code = Unknown desc = kustomize failed"),
                     Payload(2));
  HubAppRef application = Ref(3, "c3");
  seed_with_payload_(application, Payload(3));
  auto got = store_->LookupHubApps({Id(1), Id(2), Id(3)});
  ASSERT_TRUE(got.ok()) << got.status();
  std::sort(got->begin(), got->end(),
            [](const HubAppRef& a, const HubAppRef& b) { return a.resource_id < b.resource_id; });
  ASSERT_EQ(got->size(), 3U);
  EXPECT_EQ((*got)[0], ManifestRef(1, "c1"));
  EXPECT_EQ((*got)[1], ManifestRef(2, "c2", "rpc error: code = Unknown desc = kustomize failed"));
  EXPECT_EQ((*got)[2], application);  // Application delivery: no manifest render
}

TEST_P(StatusStoreContract, LooksUpPayloadsByResourceId) {
  seed_with_payload_(ManifestRef(1, "c1"), Payload(1));
  seed_with_payload_(ManifestRef(2, "c2"), Payload(2));
  auto got = store_->LookupPayloads({Id(2), Id(9), "not-a-uuid"});
  ASSERT_TRUE(got.ok()) << got.status();
  const std::vector<DispatchedPayload> expected = {{Id(2), "payload-hash-0", Payload(2)}};
  EXPECT_EQ(*got, expected);
  auto none = store_->LookupPayloads({});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST_P(StatusStoreContract, StaleManifestRendersAreThoseChangedSinceTheirStatusWasSaved) {
  seed_with_payload_(ManifestRef(1, "c1"), Payload(1));
  seed_with_payload_(ManifestRef(2, "c2"), Payload(2));
  seed_with_payload_(Ref(3, "c3"), Payload(3));  // Application delivery: never listed
  using Stale = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(StaleRenders(), (Stale{{Id(1), "c1"}, {Id(2), "c2"}}));  // no status saved yet
  ASSERT_TRUE(
      store_
          ->SaveAppliedStatuses({Applied(1, "Synced", "Healthy"), Applied(2, "Synced", "Healthy")})
          .ok());
  EXPECT_EQ(StaleRenders(), Stale{});
  seed_with_payload_(ManifestRef(2, "c2", "render failed"), Payload(2));  // a later render
  EXPECT_EQ(StaleRenders(), (Stale{{Id(2), "c2"}}));
}

TEST_P(StatusStoreContract, LooksUpHubAppsInBatchesAndSkipsUnknownIds) {
  seed_(Ref(1, "c1"));
  seed_(Ref(2, "c2", /*with_appset=*/false));
  auto got = store_->LookupHubApps({Id(1), Id(2), Id(3), "not-a-uuid", Id(1)});
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 2U);
  std::sort(got->begin(), got->end(),
            [](const HubAppRef& a, const HubAppRef& b) { return a.resource_id < b.resource_id; });
  EXPECT_EQ((*got)[0], Ref(1, "c1"));
  EXPECT_EQ((*got)[1], Ref(2, "c2", false));
  auto none = store_->LookupHubApps({});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST_P(StatusStoreContract, SavesAndReloadsAppliedStatuses) {
  ASSERT_TRUE(store_
                  ->SaveAppliedStatuses(
                      {Applied(1, "Synced", "Healthy"), Applied(2, "OutOfSync", "Degraded")})
                  .ok());
  AppliedStatus newer = Applied(1, "Synced", "Progressing");
  newer.last_sequence_id += 10;
  newer.volatile_written_at.reset();
  newer.appset_name.reset();
  newer.appset_namespace.reset();
  newer.acked_version = 3;
  ASSERT_TRUE(store_->SaveAppliedStatuses({newer}).ok());

  std::vector<AppliedStatus> all;
  ASSERT_TRUE(store_->ForEachAppliedStatus([&](const AppliedStatus& s) { all.push_back(s); }).ok());
  std::sort(all.begin(), all.end(), [](const AppliedStatus& a, const AppliedStatus& b) {
    return a.resource_id < b.resource_id;
  });
  ASSERT_EQ(all.size(), 2U);
  EXPECT_EQ(all[0], newer);
  EXPECT_EQ(all[1], Applied(2, "OutOfSync", "Degraded"));
}

TEST_P(StatusStoreContract, SavesAndReloadsTheAcknowledgedVersion) {
  AppliedStatus acked = Applied(1, "Synced", "Healthy");
  acked.acked_version = 7;
  AppliedStatus largest = Applied(2, "Synced", "Healthy");
  largest.acked_version = std::numeric_limits<int32_t>::max();
  AppliedStatus none = Applied(3, "Synced", "Healthy");
  ASSERT_TRUE(store_->SaveAppliedStatuses({acked, largest, none}).ok());
  // A later save writes the value it carries, also back to none (the sink never goes back).
  AppliedStatus newer = largest;
  newer.acked_version.reset();
  ASSERT_TRUE(store_->SaveAppliedStatuses({newer}).ok());

  std::map<std::string, std::optional<int32_t>> versions;
  ASSERT_TRUE(store_
                  ->ForEachAppliedStatus(
                      [&](const AppliedStatus& s) { versions[s.resource_id] = s.acked_version; })
                  .ok());
  EXPECT_EQ(versions, (std::map<std::string, std::optional<int32_t>>{
                          {Id(1), 7}, {Id(2), std::nullopt}, {Id(3), std::nullopt}}));
}

TEST_P(StatusStoreContract, AnAcknowledgementAloneKeepsTheStoredSyncAndHealth) {
  auto alone = [](int n, int32_t version) {
    AppliedStatus s = Applied(n, "Synced", "Healthy");
    s.sync_status.reset();
    s.health_status.reset();
    s.acked_version = version;
    s.acknowledgement_only = true;
    return s;
  };
  // Saved over a stored status; in one batch after a status; with nothing stored before.
  ASSERT_TRUE(store_->SaveAppliedStatuses({Applied(1, "Synced", "Healthy")}).ok());
  ASSERT_TRUE(store_->SaveAppliedStatuses({alone(1, 3)}).ok());
  ASSERT_TRUE(store_->SaveAppliedStatuses({Applied(2, "OutOfSync", "Degraded"), alone(2, 4)}).ok());
  ASSERT_TRUE(store_->SaveAppliedStatuses({alone(3, 5)}).ok());
  // A status without sync or health (not an acknowledgement alone) clears them.
  AppliedStatus cleared = Applied(4, "Synced", "Healthy");
  ASSERT_TRUE(store_->SaveAppliedStatuses({cleared}).ok());
  cleared.sync_status.reset();
  cleared.health_status.reset();
  ASSERT_TRUE(store_->SaveAppliedStatuses({cleared}).ok());

  std::map<std::string, AppliedStatus> rows;
  ASSERT_TRUE(
      store_->ForEachAppliedStatus([&](const AppliedStatus& s) { rows[s.resource_id] = s; }).ok());
  ASSERT_EQ(rows.size(), 4U);
  EXPECT_EQ(rows[Id(1)].sync_status, "Synced");
  EXPECT_EQ(rows[Id(1)].health_status, "Healthy");
  EXPECT_EQ(rows[Id(1)].acked_version, 3);
  EXPECT_EQ(rows[Id(2)].sync_status, "OutOfSync");
  EXPECT_EQ(rows[Id(2)].health_status, "Degraded");
  EXPECT_EQ(rows[Id(2)].acked_version, 4);
  EXPECT_EQ(rows[Id(3)].sync_status, std::nullopt);
  EXPECT_EQ(rows[Id(3)].health_status, std::nullopt);
  EXPECT_EQ(rows[Id(3)].acked_version, 5);
  EXPECT_EQ(rows[Id(4)].sync_status, std::nullopt);
  EXPECT_EQ(rows[Id(4)].health_status, std::nullopt);
  for (const auto& [id, row] : rows) {
    EXPECT_FALSE(row.acknowledgement_only) << id;
  }
}

TEST_P(StatusStoreContract, CountsApplicationsPerAppSetBySyncAndHealth) {
  ASSERT_TRUE(store_
                  ->SaveAppliedStatuses(
                      {Applied(1, "Synced", "Healthy"), Applied(3, "Synced", "Healthy"),
                       Applied(5, "OutOfSync", "Healthy"), Applied(2, "Synced", "Degraded")})
                  .ok());
  AppliedStatus standalone = Applied(7, "Synced", "Healthy");
  standalone.appset_name.reset();
  standalone.appset_namespace.reset();
  ASSERT_TRUE(store_->SaveAppliedStatuses({standalone}).ok());
  auto counts = store_->AppSetCounts();
  ASSERT_TRUE(counts.ok()) << counts.status();
  const std::vector<AppSetCount> expected = {
      {"argocd", "appset-0", "Synced", "Degraded", 1},
      {"argocd", "appset-1", "OutOfSync", "Healthy", 1},
      {"argocd", "appset-1", "Synced", "Healthy", 2},
  };
  EXPECT_EQ(*counts, expected);
}

TEST_P(StatusStoreContract, ResyncEntriesCoverEveryDispatchedResource) {
  seed_(Ref(1, "c1"));
  seed_(Ref(2, "c2"));
  ASSERT_TRUE(store_->SaveAppliedStatuses({Applied(1, "Synced", "Healthy")}).ok());
  std::vector<ResyncEntry> entries;
  ASSERT_TRUE(store_->ForEachResyncEntry([&](const ResyncEntry& e) { entries.push_back(e); }).ok());
  std::sort(entries.begin(), entries.end(), [](const ResyncEntry& a, const ResyncEntry& b) {
    return a.resource_id < b.resource_id;
  });
  const std::vector<ResyncEntry> expected = {{Id(1), "c1", "status-1"}, {Id(2), "c2", ""}};
  EXPECT_EQ(entries, expected);
}

TEST_P(StatusStoreContract, DeletionConfirmationUpdatesTheDispatchedResourceAndForgetsStatus) {
  HubAppRef deleting = Ref(1, "c1");
  deleting.deletion_state = DeletionState::kDeleteRequested;
  seed_(deleting);
  ASSERT_TRUE(store_->SaveAppliedStatuses({Applied(1, "Synced", "Healthy")}).ok());
  EXPECT_EQ(store_->MarkDeletionConfirmed(Id(1)).value_or(false), true);
  EXPECT_EQ(store_->MarkDeletionConfirmed(Id(1)).value_or(false), true);  // idempotent
  EXPECT_EQ(store_->MarkDeletionConfirmed(Id(9)).value_or(true), false);  // unknown: not confirmed
  auto got = store_->LookupHubApps({Id(1)});
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->size(), 1U);
  EXPECT_EQ((*got)[0].deletion_state, DeletionState::kDeleteConfirmed);
  int rows = 0;
  ASSERT_TRUE(store_->ForEachAppliedStatus([&](const AppliedStatus&) { ++rows; }).ok());
  EXPECT_EQ(rows, 0);
}

TEST_P(StatusStoreContract, ADeletedReportForALiveResourceChangesNothing) {
  seed_(Ref(2, "c2"));  // live: never asked to delete, or re-created since
  ASSERT_TRUE(store_->SaveAppliedStatuses({Applied(2, "Synced", "Healthy")}).ok());
  auto confirmed = store_->MarkDeletionConfirmed(Id(2));
  ASSERT_TRUE(confirmed.ok()) << confirmed.status();
  EXPECT_FALSE(*confirmed);  // the caller reports the report
  auto got = store_->LookupHubApps({Id(2)});
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->size(), 1U);
  EXPECT_EQ((*got)[0].deletion_state, DeletionState::kLive);
  int rows = 0;
  ASSERT_TRUE(store_->ForEachAppliedStatus([&](const AppliedStatus&) { ++rows; }).ok());
  EXPECT_EQ(rows, 1);
}

}  // namespace mmi::store::testing
