#include "services/dispatcher/apps/propagated_request.h"

#include <gtest/gtest.h>

#include "services/dispatcher/apps/payload.h"

namespace mmi::dispatcher {
namespace {

using nlohmann::json;

json App() {
  return {{"apiVersion", "argoproj.io/v1alpha1"},
          {"kind", "Application"},
          {"metadata",
           {{"name", "a"},
            {"namespace", "argocd"},
            {"finalizers", {"x.example.com/keep", kResourcesFinalizer}},
            {"annotations", {{kRefreshAnnotation, "hard"}, {"other", "1"}}}}},
          {"spec", {{"project", "default"}}},
          {"operation", {{"sync", {{"revision", "HEAD"}}}}}};
}

TEST(PropagatedRequestTest, StripPatchTestsTheExactValuesItRemoves) {
  const PropagatedRequest r = PropagatedRequestOf(App());
  ASSERT_TRUE(r.operation.has_value());
  ASSERT_EQ(r.refresh, "hard");
  const json ops = StripRequestPatch(r);
  ASSERT_EQ(ops.size(), 4U);
  EXPECT_EQ(ops[0], json({{"op", "test"}, {"path", "/operation"}, {"value", *r.operation}}));
  EXPECT_EQ(ops[1], json({{"op", "remove"}, {"path", "/operation"}}));
  EXPECT_EQ(ops[2]["path"], "/metadata/annotations/argocd.argoproj.io~1refresh");
  EXPECT_EQ(ops[2]["value"], "hard");
  const json stripped = App().patch(ops);
  EXPECT_FALSE(stripped.contains("operation"));
  EXPECT_EQ(stripped["metadata"]["annotations"], json({{"other", "1"}}));
  EXPECT_TRUE(StripRequestPatch(PropagatedRequest{}).empty());
}

}  // namespace
}  // namespace mmi::dispatcher
