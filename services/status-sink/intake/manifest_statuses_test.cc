#include "services/status-sink/intake/manifest_statuses.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "libs/cloudevents/manifest_bundle.h"
#include "libs/common/testing/fake_clock.h"
#include "libs/store/testing/fake_status_store.h"

namespace mmi::status_sink {
namespace {

std::string Id(int n) { return "00000000-0000-5000-8000-00000000000" + std::to_string(n); }

store::HubAppRef Resource(int n, std::optional<std::string> render_error = std::nullopt) {
  store::HubAppRef ref;
  ref.resource_id = Id(n);
  ref.cluster = "cluster" + std::to_string(n);
  ref.hub_namespace = "argocd";
  ref.hub_name = "app-" + std::to_string(n);
  store::ManifestRenderRef render;
  render.revision = "9f2c4e1";
  render.source_type = "Directory";
  render.payload_hash = "render-a";
  render.version = 1;
  render.render_error = std::move(render_error);
  ref.manifest = render;
  return ref;
}

std::string Payload() {
  cloudevents::ManifestBundle bundle;
  bundle.manifests = {
      {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", "settings"}}}}};
  return cloudevents::EncodeManifestBundle(bundle).value_or("");
}

// The agent's report of generation 1: the ConfigMap applied.
HeldReport AgentReport(const std::string& hash, bool with_spec_echo = false) {
  auto status = std::make_shared<cloudevents::ManifestBundleStatus>();
  cloudevents::Condition applied{.type = "Applied",
                                 .status = "True",
                                 .observed_generation = 1,
                                 .last_transition_time = std::chrono::system_clock::from_time_t(0),
                                 .reason = "",
                                 .message = ""};
  status->conditions = {applied};
  status->resource_status = {
      cloudevents::ManifestCondition{.resource_meta = {.ordinal = 0,
                                                       .group = "",
                                                       .version = "v1",
                                                       .kind = "ConfigMap",
                                                       .resource = "configmaps",
                                                       .name = "settings",
                                                       .namespace_ = ""},
                                     .status_feedback = {},
                                     .conditions = {applied}}};
  if (with_spec_echo) {
    status->manifest_bundle = cloudevents::ManifestBundle{};
  }
  StatusReport report;
  report.update.status_hash = hash;
  report.bundle_status = std::move(status);
  report.bundle_generation = 1;
  return ManifestStatuses::HeldOf(report);
}

class ManifestStatusesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::vector<store::HubAppRef> refs;
    for (int n = 1; n <= 3; ++n) {
      refs.push_back(Resource(n));
      store_.AddResourceForTest(refs.back(), Payload());
    }
    ASSERT_TRUE(payloads_.Load(store_, refs).ok());
  }

  mmi::testing::FakeClock clock_;
  store::testing::FakeStatusStore store_;
  ManifestPayloads payloads_{8};
};

TEST_F(ManifestStatusesTest, ARenderChangeIsMappedAgainFromTheHeldAgentReport) {
  ManifestStatuses statuses(payloads_, clock_, /*max_held=*/8);
  std::string detail;
  EXPECT_FALSE(statuses.Rebuild(Resource(1), detail).has_value()) << "no report held yet";
  statuses.Hold(Id(1), AgentReport("hash-1"));
  std::optional<StatusUpdate> update = statuses.Rebuild(Resource(1, "render timed out"), detail);
  ASSERT_TRUE(update.has_value()) << detail;
  EXPECT_EQ(update->resource_id, Id(1));
  EXPECT_EQ(update->status_hash, "hash-1");
  EXPECT_FALSE(update->sequence_id.has_value()) << "no agent event: never stale";
  EXPECT_FALSE(update->event_time.has_value()) << "no agent event: no lag sample";
  ASSERT_EQ(update->status["conditions"].size(), 1U);
  EXPECT_EQ(update->status["conditions"][0]["message"],
            "Failed to load target state: render timed out");
  EXPECT_EQ(update->status["sync"]["revision"], "9f2c4e1");

  store::HubAppRef unknown_payload = Resource(1);
  unknown_payload.manifest->payload_hash = "render-b";
  EXPECT_FALSE(statuses.Rebuild(unknown_payload, detail).has_value()) << "manifests not held";
  statuses.Forget(Id(1));
  EXPECT_FALSE(statuses.Rebuild(Resource(1), detail).has_value()) << "deleted";
  EXPECT_EQ(statuses.held(), 0U);
}

TEST_F(ManifestStatusesTest, BeyondMaxHeldTheLeastRecentlyReportedIsEvicted) {
  ManifestStatuses statuses(payloads_, clock_, /*max_held=*/2);
  std::string detail;
  statuses.Hold(Id(1), AgentReport("hash-1"));
  statuses.Hold(Id(2), AgentReport("hash-2"));
  statuses.Hold(Id(1), AgentReport("hash-1b"));  // reported again: the most recent now
  statuses.Hold(Id(3), AgentReport("hash-3"));
  EXPECT_EQ(statuses.held(), 2U);
  EXPECT_FALSE(statuses.Rebuild(Resource(2), detail).has_value());
  ASSERT_TRUE(statuses.Rebuild(Resource(1), detail).has_value());
  EXPECT_EQ(statuses.Rebuild(Resource(1), detail)->status_hash, "hash-1b");
  EXPECT_TRUE(statuses.Rebuild(Resource(3), detail).has_value());

  ManifestStatuses none(payloads_, clock_, /*max_held=*/0);
  none.Hold(Id(1), AgentReport("hash-1"));
  EXPECT_EQ(none.held(), 0U);
}

TEST_F(ManifestStatusesTest, TheAgentsTextIsHeldAsItCameAndRebuildsAsTheEncodedOne) {
  StatusReport report;
  report.bundle_status = std::make_shared<cloudevents::ManifestBundleStatus>();
  report.bundle_text = R"({"conditions":[],"resourceStatus":[],"unknownField":1})";
  EXPECT_EQ(ManifestStatuses::HeldOf(report).status, report.bundle_text);

  // The agent's text (with a field the decoder skips) and the encoded struct: one status.
  HeldReport encoded = AgentReport("hash-1");
  HeldReport as_sent = encoded;
  nlohmann::json text = nlohmann::json::parse(encoded.status);
  text["unknownField"] = {{"any", 1}};
  as_sent.status = text.dump(2);
  ManifestStatuses statuses(payloads_, clock_, /*max_held=*/8);
  statuses.Hold(Id(1), encoded);
  statuses.Hold(Id(2), as_sent);
  std::string detail;
  auto from_encoded = statuses.Rebuild(Resource(1), detail);
  auto from_sent = statuses.Rebuild(Resource(2), detail);
  ASSERT_TRUE(from_encoded.has_value() && from_sent.has_value()) << detail;
  EXPECT_EQ(from_encoded->status, from_sent->status);
}

TEST_F(ManifestStatusesTest, TheSpecEchoOfMaestrosSourceServerIsNotHeld) {
  const HeldReport held = AgentReport("hash-1", /*with_spec_echo=*/true);
  auto status = cloudevents::DecodeManifestBundleStatus(held.status);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_FALSE(status->manifest_bundle.has_value());
  EXPECT_EQ(status->resource_status.size(), 1U);
  EXPECT_EQ(held.status, AgentReport("hash-1").status) << "held as without the echo";
}

}  // namespace
}  // namespace mmi::status_sink
