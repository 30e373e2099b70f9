// What the dispatcher builds for an Application, checked against what the real Maestro server
// relayed to the real work agent for the same Application, and what our dispatcher sent straight
// to the agent over MQTT (../shared/spec/samples/captured/): the manifest, the feedback rules,
// the update strategy, the work metadata and the resource id.
#include <gtest/gtest.h>

#include <string>

#include "libs/cloudevents/json_format.h"
#include "libs/cloudevents/manifest_bundle.h"
#include "libs/cloudevents/mqtt_codec.h"
#include "libs/cloudevents/object_meta.h"
#include "libs/cloudevents/testing/captured.h"
#include "services/dispatcher/apps/payload.h"
#include "services/dispatcher/apps/spec_events.h"

namespace mmi::dispatcher {
namespace {

using nlohmann::json;

// The hub Application that produced `spoke` (the captured manifest): as the demo creates it, with
// the hub's own destination, which the dispatcher rewrites to the spoke's in-cluster server.
json HubApplicationFor(const json& spoke, const std::string& cluster) {
  json app = {{"apiVersion", "argoproj.io/v1alpha1"},
              {"kind", "Application"},
              {"metadata",
               {{"name", spoke["metadata"]["name"]},
                {"namespace", spoke["metadata"]["namespace"]},
                {"uid", "9d5e2f7a-0000-4000-8000-000000000001"},
                {"resourceVersion", "4242"},
                {"generation", 3},
                {"labels", {{kPullLabel, "true"}}},
                {"annotations", {{kClusterAnnotation, cluster}}},
                {"finalizers", spoke["metadata"]["finalizers"]}}},
              {"spec", spoke["spec"]},
              {"status", {{"sync", {{"status", "Synced"}}}}}};
  app["spec"]["destination"] = {{"server", "https://" + cluster + "-control-plane:6443"},
                                {"namespace", spoke["spec"]["destination"]["namespace"]}};
  return app;
}

TEST(CapturedPayloadTest, OurPayloadIsWhatMaestroRelayedAndWhatWeSentDirectly) {
  auto records = cloudevents::testing::ReadCaptured(cloudevents::testing::kCapturedSourceEvents);
  ASSERT_TRUE(records.ok()) << records.status();
  int compared = 0;
  for (const auto& record : *records) {
    SCOPED_TRACE(::testing::Message() << "sourceevents.jsonl:" << record.line);
    auto event = cloudevents::DecodeMqtt(record.message);
    ASSERT_TRUE(event.ok()) << event.status();
    if (!event->data.has_value() || event->data->empty() ||
        event->type == cloudevents::kStatusResyncRequestType) {
      continue;  // deletes and status resync requests carry no bundle
    }
    auto captured = cloudevents::ManifestBundleOf(*event);
    ASSERT_TRUE(captured.ok()) << captured.status();
    const std::string cluster = event->ClusterName().value_or("");
    const json spoke = captured->manifests.at(0);

    auto built = BuildDispatch(HubApplicationFor(spoke, cluster), PayloadSettings{});
    ASSERT_TRUE(built.ok()) << built.status();
    EXPECT_EQ(built->resource_id, event->ResourceId().value_or(""));
    // Ours has one JSONPath more than the upstream controller's: the end-to-end
    // acknowledgement's `dispatchVersion` (payload.h). Everything else is byte for byte theirs.
    cloudevents::ManifestBundle upstream_shape = built->bundle;
    auto& paths = upstream_shape.manifest_configs.at(0).feedback_rules.at(0).json_paths;
    ASSERT_EQ(paths.size(), 2U);
    EXPECT_EQ(paths.back().name, kDispatchVersionFeedback);
    paths.pop_back();
    EXPECT_EQ(cloudevents::ToJson(upstream_shape), cloudevents::ToJson(*captured))
        << "manifest, feedback rules or update strategy differ";

    auto meta = cloudevents::ObjectMetaOf(*event);
    ASSERT_TRUE(meta.ok()) << meta.status();
    EXPECT_EQ(built->work_meta.labels, meta->labels);
    EXPECT_EQ(built->work_meta.annotations, meta->annotations);
    EXPECT_EQ(built->work_meta.namespace_, meta->namespace_);
    EXPECT_EQ(built->work_meta.uid, meta->uid);
    if (record.topic.starts_with("sources/maestro/")) {
      EXPECT_EQ(meta->name, built->resource_id) << "Maestro names the work after the id (§6.8)";
    } else {
      EXPECT_EQ(meta->name, built->work_meta.name);
    }
    ++compared;
  }
  EXPECT_GE(compared, 8);
}

// The outbox publishes the event the reconciler built and, after a restart, the event decoded
// from the store's text: both must be the same event, field for field and byte for byte.
TEST(CapturedPayloadTest, TheEventBuiltInMemoryIsTheOneTheStoreGivesBack) {
  auto records = cloudevents::testing::ReadCaptured(cloudevents::testing::kCapturedSourceEvents);
  ASSERT_TRUE(records.ok()) << records.status();
  std::vector<json> apps;
  for (const auto& record : *records) {
    auto event = cloudevents::DecodeMqtt(record.message);
    ASSERT_TRUE(event.ok()) << event.status();
    auto captured = cloudevents::ManifestBundleOf(*event);
    if (captured.ok() && !captured->manifests.empty()) {
      apps.push_back(
          HubApplicationFor(captured->manifests.at(0), event->ClusterName().value_or("")));
    }
  }
  ASSERT_FALSE(apps.empty());
  // Strings Go's encoder escapes (<, >, &, U+2028), non-ASCII text, numbers of every kind.
  json tricky = apps.front();
  tricky["metadata"]["annotations"]["note"] = "a <b> & c\u2028 \u00e9\u4e2d \"q\" \\ /";
  tricky["spec"]["source"]["helm"] = {{"valuesObject",
                                       {{"ratio", 0.1},
                                        {"big", 12345678901234LL},
                                        {"neg", -3},
                                        {"exp", 1e21},
                                        {"list", {true, nullptr, "x"}}}}};
  apps.push_back(tricky);
  const auto time = std::chrono::time_point_cast<std::chrono::nanoseconds>(
      std::chrono::system_clock::time_point(std::chrono::seconds(1'790'000'000)) +
      std::chrono::nanoseconds(123'456'789));
  for (const json& app : apps) {
    auto built = BuildDispatch(app, PayloadSettings{});
    ASSERT_TRUE(built.ok()) << built.status();
    for (const bool create : {true, false}) {
      auto event = MakeSpecEvent(*built, "app-work-client", create, 7, 7,
                                 "0f6b8a1e-0000-4000-8000-000000000001", time);
      ASSERT_TRUE(event.ok()) << event.status();
      auto text = cloudevents::EncodeStructuredJson(*event);
      ASSERT_TRUE(text.ok()) << text.status();
      auto back = cloudevents::DecodeStructuredJson(*text);
      ASSERT_TRUE(back.ok()) << back.status();
      EXPECT_EQ(*back, *event) << *text;
      EXPECT_EQ(back->data, event->data);
    }
  }
}

}  // namespace
}  // namespace mmi::dispatcher
