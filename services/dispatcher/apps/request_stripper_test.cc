// RequestStripper: the propagated operation/refresh removed from the hub once published.
#include "services/dispatcher/apps/request_stripper.h"

#include <gtest/gtest.h>

#include "libs/cloudevents/manifest_bundle.h"
#include "libs/cloudevents/resource_id.h"
#include "libs/common/log.h"
#include "libs/common/testing/log_capture.h"
#include "libs/transport/testing/metric_value.h"
#include "services/dispatcher/apps/testing/pipeline_fixture.h"
#include "services/dispatcher/apps/testing/reconciler_fixture.h"

// In the fixture's namespace: its helpers need no using-declarations here.
namespace mmi::dispatcher::testing {
namespace {

using nlohmann::json;
using transport::testing::MetricValue;
using RequestStripperTest = PipelineTest;

TEST_F(RequestStripperTest, PropagatesOperationAndRefreshThenRemovesThemFromTheHub) {
  json app = PullApp("argocd", "guestbook", "cluster1");
  app["operation"] = {{"sync", {{"revision", "HEAD"}}}, {"initiatedBy", {{"username", "alice"}}}};
  app["metadata"]["annotations"][kRefreshAnnotation] = "hard";
  PutApp(app);
  Process& p = Start();

  ASSERT_GE(p.publisher.accepted().size(), 1U);
  const json spoke = cloudevents::ManifestBundleOf(p.publisher.accepted()[0])->manifests.at(0);
  EXPECT_EQ(spoke["operation"]["sync"]["revision"], "HEAD");
  EXPECT_EQ(spoke["metadata"]["annotations"][kRefreshAnnotation], "hard");

  // Removed from the hub with one guarded JSON patch.
  const json hub_app = hub_.Get(ApplicationsRef("argocd"), "guestbook").value();
  EXPECT_FALSE(hub_app.contains("operation"));
  EXPECT_FALSE(hub_app["metadata"]["annotations"].contains(kRefreshAnnotation));
  int json_patches = 0;
  for (const auto& call : hub_.Calls()) {
    if (call.verb == "PATCH" && call.detail == "json") {
      ++json_patches;
      EXPECT_EQ(call.body[0]["op"], "test");
      EXPECT_EQ(call.body[0]["path"], "/operation");
    }
  }
  EXPECT_EQ(json_patches, 1);
  EXPECT_EQ(MetricValue(p.registry, "mmi_dispatcher_hub_writes_total",
                        {{"operation", "strip_operation"}, {"result", "ok"}}),
            1);

  // The informer sees the stripped object: nothing is sent (a payload without `operation` would
  // make the agent's server-side apply cut short the sync running on the spoke), and no second
  // strip.
  Sync("argocd", "guestbook");
  p.RunAll();
  EXPECT_EQ(p.publisher.accepted().size(), 1U);
  EXPECT_EQ(hub_.CountCalls("PATCH"), 1U);
  EXPECT_EQ(
      MetricValue(p.registry, "mmi_dispatcher_decisions_total", {{"decision", "request_stripped"}}),
      1);

  // The same operation written again is a new request. The agent still holds the payload that
  // carried the first one and would skip an identical one (OCM's config-spec-hash): the stripped
  // payload goes first, then the request, which is stripped again.
  json again = hub_.Get(ApplicationsRef("argocd"), "guestbook").value();
  again["operation"] = app["operation"];
  again["metadata"]["annotations"][kRefreshAnnotation] = "hard";
  PutApp(again);
  Sync("argocd", "guestbook");
  p.RunAll();
  ASSERT_EQ(p.publisher.accepted().size(), 3U);
  const json between = cloudevents::ManifestBundleOf(p.publisher.accepted()[1])->manifests.at(0);
  EXPECT_FALSE(between.contains("operation"));
  const json resent = cloudevents::ManifestBundleOf(p.publisher.accepted()[2])->manifests.at(0);
  EXPECT_EQ(resent["operation"]["initiatedBy"]["username"], "alice");
  EXPECT_FALSE(hub_.Get(ApplicationsRef("argocd"), "guestbook")->contains("operation"));

  // A change of anything else is sent, without the request.
  json changed = hub_.Get(ApplicationsRef("argocd"), "guestbook").value();
  changed["spec"]["source"]["targetRevision"] = "v2";
  PutApp(changed);
  Sync("argocd", "guestbook");
  p.RunAll();
  ASSERT_EQ(p.publisher.accepted().size(), 4U);
  const json after = cloudevents::ManifestBundleOf(p.publisher.accepted()[3])->manifests.at(0);
  EXPECT_FALSE(after.contains("operation"));
  EXPECT_EQ(after["spec"]["source"]["targetRevision"], "v2");
}

TEST_F(RequestStripperTest, ANewerOperationIsNotRemovedByTheStripOfAnOlderOne) {
  PropagatedRequest old_request;
  old_request.operation = json{{"sync", {{"revision", "v1"}}}};
  json app = PullApp("argocd", "guestbook", "cluster1");
  app["operation"] = {{"sync", {{"revision", "v2"}}}};
  ASSERT_TRUE(hub_.Create(ApplicationsRef("argocd"), app, {}).ok());
  const absl::Status s = StripRequest(hub_, "argocd", "guestbook", old_request);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_TRUE(hub_.Get(ApplicationsRef("argocd"), "guestbook")->contains("operation"));
}

}  // namespace
}  // namespace mmi::dispatcher::testing
