// The hand-over between Application and manifest delivery (handover.h): the pure steps as a
// table, then the Reconciler on a fake ManifestDelivery and the fake store through both
// directions, a restart between the steps and a switch back before the second.
#include "services/dispatcher/apps/handover.h"

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "services/dispatcher/apps/manifest_delivery.h"
#include "services/dispatcher/apps/testing/pipeline_fixture.h"
#include "services/dispatcher/apps/testing/reconciler_fixture.h"

namespace mmi::dispatcher::testing {
namespace {

using nlohmann::json;
using store::Delivery;

TEST(NextDeliveryTest, TwoStepsEachWayTheSecondOnlyOnceAcknowledged) {
  struct Row {
    bool wants_manifests;
    std::optional<Delivery> recorded;
    bool acknowledged;
    Delivery next;
  };
  const std::vector<Row> rows = {
      // Nothing live yet: the way asked for, at once.
      {true, std::nullopt, false, Delivery::kManifests},
      {false, std::nullopt, false, Delivery::kApplication},
      // No switch.
      {false, Delivery::kApplication, false, Delivery::kApplication},
      {true, Delivery::kManifests, false, Delivery::kManifests},
      // Application -> manifests.
      {true, Delivery::kApplication, false, Delivery::kReleasingApplication},
      {true, Delivery::kApplication, true, Delivery::kReleasingApplication},
      {true, Delivery::kReleasingApplication, false, Delivery::kReleasingApplication},
      {true, Delivery::kReleasingApplication, true, Delivery::kManifests},
      // ... switched back before the second step: the finalizer returns.
      {false, Delivery::kReleasingApplication, false, Delivery::kApplication},
      {false, Delivery::kReleasingApplication, true, Delivery::kApplication},
      // Manifests -> Application.
      {false, Delivery::kManifests, false, Delivery::kOrphaningManifests},
      {false, Delivery::kManifests, true, Delivery::kOrphaningManifests},
      {false, Delivery::kOrphaningManifests, false, Delivery::kOrphaningManifests},
      {false, Delivery::kOrphaningManifests, true, Delivery::kApplication},
      // ... switched back: the delete option that removes what was applied returns.
      {true, Delivery::kOrphaningManifests, false, Delivery::kManifests},
      {true, Delivery::kOrphaningManifests, true, Delivery::kManifests},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(::testing::Message()
                 << "wants_manifests=" << row.wants_manifests
                 << " recorded=" << (row.recorded ? store::DeliveryName(*row.recorded) : "none")
                 << " acknowledged=" << row.acknowledged);
    EXPECT_EQ(
        store::DeliveryName(NextDelivery(row.wants_manifests, row.recorded, row.acknowledged)),
        store::DeliveryName(row.next));
  }
}

TEST(WithoutPruningFinalizersTest, DropsArgoCdsPruningFinalizersOnly) {
  json app = {{"metadata",
               {{"name", "a"},
                {"finalizers",
                 {"resources-finalizer.argocd.argoproj.io",
                  "resources-finalizer.argocd.argoproj.io/background",
                  "post-delete-finalizer.argocd.argoproj.io",
                  "post-delete-finalizer.argocd.argoproj.io/cleanup", "example.com/keep"}}}}};
  EXPECT_EQ(WithoutPruningFinalizers(app)["metadata"]["finalizers"],
            json::array({"example.com/keep"}));
  const json none = {{"metadata", {{"name", "a"}}}};
  EXPECT_EQ(WithoutPruningFinalizers(none), none);
}

TEST(OrphaningTest, SetsTheOrphanDeleteOptionAndANewHash) {
  Dispatch d;
  d.bundle.manifests.push_back(json{{"apiVersion", "v1"}, {"kind", "ConfigMap"}});
  d.bundle.delete_option.emplace();
  d.bundle.delete_option->propagation_policy = "Foreground";
  d.payload_hash = PayloadHashOf(d.bundle, d.work_meta);
  const Dispatch orphaning = Orphaning(d);
  ASSERT_TRUE(orphaning.bundle.delete_option.has_value());
  EXPECT_EQ(orphaning.bundle.delete_option->propagation_policy, "Orphan");
  EXPECT_NE(orphaning.payload_hash, d.payload_hash);
  EXPECT_EQ(orphaning.request_free_hash, orphaning.payload_hash);
  EXPECT_EQ(orphaning.bundle.manifests, d.bundle.manifests);
}

// Answers as manifest delivery does for one Application whose annotation says `manifests`:
// rendered into one ConfigMap; asked for Application delivery, rendered only while handing over.
class FakeModes final : public ManifestDelivery {
 public:
  ManifestPlan Prepare(const std::string& /*key*/, const json& app, bool /*refresh*/,
                       bool handing_over) override {
    if (!manifests && !handing_over) {
      return ManifestPlan{};
    }
    Dispatch d = DispatchIdentityOf(app, PayloadSettings{}).value();
    d.bundle.manifests.push_back(json{{"apiVersion", "v1"},
                                      {"kind", "ConfigMap"},
                                      {"metadata", {{"name", "cm"}, {"namespace", "guestbook"}}},
                                      {"data", {{"k", "v"}}}});
    d.bundle.delete_option.emplace();
    d.bundle.delete_option->propagation_policy = "Foreground";
    d.payload_hash = PayloadHashOf(d.bundle, d.work_meta);
    d.request_free_hash = d.payload_hash;
    ManifestPlan plan;
    plan.kind = ManifestPlan::Kind::kRendered;
    plan.asks_application = !manifests;
    plan.render = {.resource_id = d.resource_id,
                   .revision = "sha-1",
                   .source_type = "Directory",
                   .render_error = std::nullopt};
    plan.dispatch = std::move(d);
    return plan;
  }
  void Forget(const std::string& /*key*/) override {}

  bool manifests = false;  // what the Application's annotation asks for
};

class HandoverReconcileTest : public PipelineTest {
 protected:
  void SetUp() override {
    app_ = PutApp(PullApp("argocd", "guestbook", "cluster1"));
    id_ = IdOf("cluster1", "argocd", "guestbook");
  }

  // What the store holds for the Application: its delivery and its last payload.
  Delivery RecordedDelivery() { return store_.GetResource(id_).value()->delivery; }
  json Payload() { return json::parse(store_.GetResource(id_).value()->payload); }
  int32_t Version() { return store_.GetResource(id_).value()->version; }
  bool HasRenderRow() { return store_.GetManifestRender(id_).value().has_value(); }
  static bool HoldsTheFinalizer(const json& payload) {
    return payload.dump().find(kResourcesFinalizer) != std::string::npos;
  }

  // The annotation changes on the hub and the key is decided.
  void Switch(Process& p, bool to_manifests) {
    modes_.manifests = to_manifests;
    Sync("argocd", "guestbook");
    p.RunAll();
  }
  // The agent reports the version last sent as applied; the next acknowledgement look-up runs.
  void Acknowledge(Process& p) {
    store_.SetAckForTest(id_, Version(), clock_.Now());
    clock_.Advance(std::chrono::seconds(15));
    p.RunAll();
  }

  FakeModes modes_;
  json app_;
  std::string id_;
};

TEST_F(HandoverReconcileTest, ApplicationToManifestsReleasesTheApplicationFirst) {
  Process& p = Start({}, nullptr, &modes_);
  ASSERT_EQ(p.publisher.accepted().size(), 1U);
  EXPECT_TRUE(HoldsTheFinalizer(Payload()));

  Switch(p, /*to_manifests=*/true);
  ASSERT_EQ(p.publisher.accepted().size(), 2U);
  EXPECT_EQ(RecordedDelivery(), Delivery::kReleasingApplication);
  EXPECT_EQ(Payload()["manifests"][0]["kind"], "Application");
  EXPECT_FALSE(HoldsTheFinalizer(Payload()));
  EXPECT_FALSE(HasRenderRow());  // still an Application's status for the sink

  // Decided again before the agent applied it: nothing more goes.
  Sync("argocd", "guestbook");
  p.RunAll();
  EXPECT_EQ(p.publisher.accepted().size(), 2U);

  Acknowledge(p);
  ASSERT_EQ(p.publisher.accepted().size(), 3U);
  EXPECT_EQ(RecordedDelivery(), Delivery::kManifests);
  EXPECT_EQ(Payload()["manifests"][0]["kind"], "ConfigMap");
  EXPECT_EQ(Payload()["deleteOption"]["propagationPolicy"], "Foreground");
  EXPECT_TRUE(HasRenderRow());
  // The manifest bundle's work metadata carries the dispatch version for its acknowledgement.
  EXPECT_NE(store_.GetResource(id_).value()->metadata.find("\"3\""), std::string::npos);
}

TEST_F(HandoverReconcileTest, ManifestsToApplicationOrphansTheManifestsFirst) {
  modes_.manifests = true;
  Process& p = Start({}, nullptr, &modes_);
  ASSERT_EQ(p.publisher.accepted().size(), 1U);
  EXPECT_EQ(RecordedDelivery(), Delivery::kManifests);

  Switch(p, /*to_manifests=*/false);
  ASSERT_EQ(p.publisher.accepted().size(), 2U);
  EXPECT_EQ(RecordedDelivery(), Delivery::kOrphaningManifests);
  EXPECT_EQ(Payload()["manifests"][0]["kind"], "ConfigMap");
  EXPECT_EQ(Payload()["deleteOption"]["propagationPolicy"], "Orphan");
  EXPECT_TRUE(HasRenderRow());  // the sink still maps the manifests' status

  Acknowledge(p);
  ASSERT_EQ(p.publisher.accepted().size(), 3U);
  EXPECT_EQ(RecordedDelivery(), Delivery::kApplication);
  EXPECT_EQ(Payload()["manifests"][0]["kind"], "Application");
  EXPECT_TRUE(HoldsTheFinalizer(Payload()));
  EXPECT_FALSE(HasRenderRow());
}

TEST_F(HandoverReconcileTest, ARestartBetweenTheStepsResumesTheHandOver) {
  {
    Process& p = Start({}, nullptr, &modes_);
    Switch(p, /*to_manifests=*/true);
    ASSERT_EQ(p.publisher.accepted().size(), 2U);
  }
  {
    // Restarted: the first step is not sent again, and no second one before its acknowledgement.
    Process& p = Start({}, nullptr, &modes_);
    EXPECT_TRUE(p.publisher.accepted().empty());
    EXPECT_EQ(RecordedDelivery(), Delivery::kReleasingApplication);
    Acknowledge(p);
    ASSERT_EQ(p.publisher.accepted().size(), 1U);
    EXPECT_EQ(RecordedDelivery(), Delivery::kManifests);

    Switch(p, /*to_manifests=*/false);
    EXPECT_EQ(RecordedDelivery(), Delivery::kOrphaningManifests);
  }
  Process& p = Start({}, nullptr, &modes_);
  EXPECT_TRUE(p.publisher.accepted().empty());
  Acknowledge(p);
  ASSERT_EQ(p.publisher.accepted().size(), 1U);
  EXPECT_EQ(RecordedDelivery(), Delivery::kApplication);
  EXPECT_TRUE(HoldsTheFinalizer(Payload()));
}

TEST_F(HandoverReconcileTest, ASwitchBackBeforeTheSecondStepRestoresTheFirstWay) {
  Process& p = Start({}, nullptr, &modes_);
  Switch(p, /*to_manifests=*/true);
  EXPECT_EQ(RecordedDelivery(), Delivery::kReleasingApplication);
  Switch(p, /*to_manifests=*/false);
  ASSERT_EQ(p.publisher.accepted().size(), 3U);
  EXPECT_EQ(RecordedDelivery(), Delivery::kApplication);
  EXPECT_TRUE(HoldsTheFinalizer(Payload()));
  // A late acknowledgement of the released version hands nothing over.
  Acknowledge(p);
  EXPECT_EQ(p.publisher.accepted().size(), 3U);
  EXPECT_EQ(RecordedDelivery(), Delivery::kApplication);

  Switch(p, /*to_manifests=*/true);
  Acknowledge(p);
  EXPECT_EQ(RecordedDelivery(), Delivery::kManifests);
  Switch(p, /*to_manifests=*/false);
  EXPECT_EQ(RecordedDelivery(), Delivery::kOrphaningManifests);
  Switch(p, /*to_manifests=*/true);
  EXPECT_EQ(RecordedDelivery(), Delivery::kManifests);
  EXPECT_EQ(Payload()["deleteOption"]["propagationPolicy"], "Foreground");
  Acknowledge(p);
  EXPECT_EQ(RecordedDelivery(), Delivery::kManifests);
}

TEST_F(HandoverReconcileTest, WithoutTheAcknowledgementTheSwitchIsDirect) {
  ReconcilerSettings settings;
  settings.ack_check.enabled = false;
  Process& p = Start(settings, nullptr, &modes_);
  Switch(p, /*to_manifests=*/true);
  ASSERT_EQ(p.publisher.accepted().size(), 2U);
  EXPECT_EQ(RecordedDelivery(), Delivery::kManifests);
  Switch(p, /*to_manifests=*/false);
  ASSERT_EQ(p.publisher.accepted().size(), 3U);
  EXPECT_EQ(RecordedDelivery(), Delivery::kApplication);
}

}  // namespace
}  // namespace mmi::dispatcher::testing
