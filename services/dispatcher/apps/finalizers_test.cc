#include "services/dispatcher/apps/finalizers.h"

#include <gtest/gtest.h>

#include "services/dispatcher/apps/payload.h"

namespace mmi::dispatcher {
namespace {

using nlohmann::json;

json AppWithFinalizers(const json& finalizers) {
  return {{"metadata", {{"name", "a"}, {"namespace", "argocd"}, {"finalizers", finalizers}}}};
}

TEST(FinalizersTest, OnlyTheArgoCdResourcesFinalizerCounts) {
  EXPECT_TRUE(
      HasResourcesFinalizer(AppWithFinalizers({"x.example.com/keep", kResourcesFinalizer})));
  EXPECT_FALSE(HasResourcesFinalizer(AppWithFinalizers({"x.example.com/keep"})));
  EXPECT_FALSE(HasResourcesFinalizer(json{{"metadata", {{"name", "a"}}}}));
  EXPECT_FALSE(HasResourcesFinalizer(json()));
}

TEST(FinalizersTest, ThePatchTestsEachIndexAndRemovesFromTheEnd) {
  const json app =
      AppWithFinalizers({kResourcesFinalizer, "x.example.com/keep", kResourcesFinalizer});
  const std::optional<json> ops = ReleaseFinalizerPatch(app);
  ASSERT_TRUE(ops.has_value());
  ASSERT_EQ(ops->size(), 4U);
  EXPECT_EQ(
      (*ops)[0],
      json({{"op", "test"}, {"path", "/metadata/finalizers/2"}, {"value", kResourcesFinalizer}}));
  EXPECT_EQ((*ops)[1], json({{"op", "remove"}, {"path", "/metadata/finalizers/2"}}));
  EXPECT_EQ((*ops)[2]["path"], "/metadata/finalizers/0");
  EXPECT_EQ(app.patch(*ops)["metadata"]["finalizers"], json::array({"x.example.com/keep"}));
}

}  // namespace
}  // namespace mmi::dispatcher
