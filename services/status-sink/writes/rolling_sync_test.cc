#include "services/status-sink/writes/rolling_sync.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "libs/common/clock.h"
#include "libs/kube/testing/fake_kube_client.h"

namespace mmi::status_sink {
namespace {

using nlohmann::json;

TEST(ProgressingModeTest, ParsesTheModesAndTheEarlierBooleans) {
  EXPECT_EQ(ParseProgressingMode("RollingSync").value(), ProgressingMode::kRollingSync);
  EXPECT_EQ(ParseProgressingMode("Always").value(), ProgressingMode::kAlways);
  EXPECT_EQ(ParseProgressingMode("Never").value(), ProgressingMode::kNever);
  EXPECT_EQ(ParseProgressingMode("true").value(), ProgressingMode::kAlways);
  EXPECT_EQ(ParseProgressingMode("false").value(), ProgressingMode::kNever);
  const auto bad = ParseProgressingMode("rollingsync");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("status.progressingBeforeHealthy"), std::string::npos);
  for (ProgressingMode mode :
       {ProgressingMode::kNever, ProgressingMode::kRollingSync, ProgressingMode::kAlways}) {
    EXPECT_EQ(ParseProgressingMode(ProgressingModeName(mode)).value(), mode);
  }
}

class Answer final : public RollingSyncLookup {
 public:
  explicit Answer(std::optional<bool> answer) : answer_(answer) {}
  std::optional<bool> UsesRollingSync(std::string_view, std::string_view) const override {
    return answer_;
  }

 private:
  std::optional<bool> answer_;
};

TEST(WantsProgressingFirstTest, FollowsTheModeAndTheApplicationSetsStrategy) {
  const std::optional<std::string> ns = "openshift-gitops";
  const std::optional<std::string> appset = "guestbook";
  const std::optional<std::string> none;
  const Answer rolling(true), other(false), unknown(std::nullopt);
  EXPECT_FALSE(WantsProgressingFirst(ProgressingMode::kNever, &rolling, ns, appset));
  EXPECT_TRUE(WantsProgressingFirst(ProgressingMode::kAlways, &other, ns, appset));
  EXPECT_TRUE(WantsProgressingFirst(ProgressingMode::kAlways, nullptr, none, none));
  EXPECT_TRUE(WantsProgressingFirst(ProgressingMode::kRollingSync, &rolling, ns, appset));
  EXPECT_FALSE(WantsProgressingFirst(ProgressingMode::kRollingSync, &other, ns, appset));
  EXPECT_TRUE(WantsProgressingFirst(ProgressingMode::kRollingSync, &unknown, ns, appset));
  EXPECT_TRUE(WantsProgressingFirst(ProgressingMode::kRollingSync, nullptr, ns, appset));
  // An Application no ApplicationSet generated has no rollout waiting for the transition.
  EXPECT_FALSE(WantsProgressingFirst(ProgressingMode::kRollingSync, &rolling, none, none));
}

json AppSet(const std::string& ns, const std::string& name, const json& strategy) {
  json appset = {{"apiVersion", "argoproj.io/v1alpha1"},
                 {"kind", "ApplicationSet"},
                 {"metadata", {{"name", name}, {"namespace", ns}}},
                 {"spec",
                  {{"generators", json::array({{{"list", {{"elements", json::array()}}}}})},
                   {"template", {{"metadata", json::object()}, {"spec", json::object()}}}}}};
  if (!strategy.is_null()) {
    appset["spec"]["strategy"] = strategy;
  }
  return appset;
}

TEST(InformerRollingSyncLookupTest, ReadsTheStrategyFromTheWatchCache) {
  kube::testing::FakeKubeClient kube;
  const kube::ResourceRef ref = InformerRollingSyncLookup::Settings().resource;
  ASSERT_TRUE(
      kube.Create(ref.InNamespace("gitops"),
                  AppSet("gitops", "waves",
                         {{"type", "RollingSync"}, {"rollingSync", {{"steps", json::array()}}}}),
                  {})
          .ok());
  ASSERT_TRUE(
      kube.Create(ref.InNamespace("gitops"), AppSet("gitops", "all-at-once", nullptr), {}).ok());
  ASSERT_TRUE(kube.Create(ref.InNamespace("other"),
                          AppSet("other", "explicit", {{"type", "AllAtOnce"}}), {})
                  .ok());

  InformerRollingSyncLookup lookup(kube, RealClock::Instance(), nullptr);
  EXPECT_EQ(lookup.UsesRollingSync("gitops", "waves"), std::nullopt) << "not synced yet";
  lookup.Start();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!lookup.UsesRollingSync("gitops", "waves").has_value() &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(lookup.UsesRollingSync("gitops", "waves"), std::optional<bool>(true));
  EXPECT_EQ(lookup.UsesRollingSync("gitops", "all-at-once"), std::optional<bool>(false));
  EXPECT_EQ(lookup.UsesRollingSync("other", "explicit"), std::optional<bool>(false));
  // Not in the synced cache (just created and not yet seen, or deleted): unknown, which
  // WantsProgressingFirst counts as RollingSync.
  EXPECT_EQ(lookup.UsesRollingSync("gitops", "absent"), std::nullopt);
  EXPECT_EQ(lookup.UsesRollingSync("other", "waves"), std::nullopt);

  // A strategy switched on later is seen through the watch.
  ASSERT_TRUE(kube.Patch(ref.InNamespace("gitops"), "all-at-once", kube::PatchType::kMerge,
                         {{"spec", {{"strategy", {{"type", "RollingSync"}}}}}}, {}, "")
                  .ok());
  const auto patched_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (lookup.UsesRollingSync("gitops", "all-at-once") != std::optional<bool>(true) &&
         std::chrono::steady_clock::now() < patched_deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(lookup.UsesRollingSync("gitops", "all-at-once"), std::optional<bool>(true));
  lookup.Stop();
}

}  // namespace
}  // namespace mmi::status_sink
