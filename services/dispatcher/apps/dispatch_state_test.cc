#include "services/dispatcher/apps/dispatch_state.h"

#include <gtest/gtest.h>

#include <string>

#include "prometheus/gauge.h"
#include "prometheus/registry.h"

namespace mmi::dispatcher {
namespace {

TrackedResource Resource(const std::string& id, const std::string& ns, const std::string& name) {
  TrackedResource t;
  t.identity = ResourceIdentity{.resource_id = id,
                                .cluster = "cluster1",
                                .work_name = ns + "-" + name,
                                .hub_namespace = ns,
                                .hub_name = name};
  return t;
}

class DispatchStateTest : public ::testing::Test {
 protected:
  prometheus::Registry registry_;
  prometheus::Gauge& gauge_ = prometheus::BuildGauge().Name("tracked").Register(registry_).Add({});
  DispatchState state_{gauge_};
};

TEST_F(DispatchStateTest, FindsAResourceByIdAndByKeyUntilUntracked) {
  state_.Track(Resource("id-1", "argocd", "app"));
  ASSERT_NE(state_.Find("id-1"), nullptr);
  EXPECT_EQ(state_.FindByKey("argocd/app"), state_.Find("id-1"));
  EXPECT_EQ(gauge_.Value(), 1);
  state_.Untrack("id-1");
  EXPECT_EQ(state_.Find("id-1"), nullptr);
  EXPECT_EQ(state_.FindByKey("argocd/app"), nullptr);
  EXPECT_TRUE(state_.keys().empty());
  EXPECT_EQ(gauge_.Value(), 0);
}

TEST_F(DispatchStateTest, TrackingAnIdAgainUnderAnotherKeyDropsTheOldKey) {
  // "team-a/app" and "team/a-app" have the same work name, so the same resource id.
  state_.Track(Resource("id-1", "team-a", "app"));
  state_.Track(Resource("id-1", "team", "a-app"));
  EXPECT_EQ(state_.FindByKey("team-a/app"), nullptr);
  ASSERT_NE(state_.FindByKey("team/a-app"), nullptr);
  EXPECT_EQ(state_.FindByKey("team/a-app")->identity.hub_namespace, "team");
  state_.Untrack("id-1");
  EXPECT_EQ(state_.FindByKey("team-a/app"), nullptr);
  EXPECT_EQ(state_.FindByKey("team/a-app"), nullptr);
  EXPECT_TRUE(state_.keys().empty());
}

TEST_F(DispatchStateTest, AKeyMovedToANewResourceStaysWithItWhenTheOldOneGoes) {
  // An Application retargeted to another cluster: a new resource id under the same key, the
  // old resource kept until its deletion finishes.
  state_.Track(Resource("old", "argocd", "app"));
  state_.Track(Resource("new", "argocd", "app"));
  EXPECT_EQ(state_.FindByKey("argocd/app"), state_.Find("new"));
  state_.Untrack("old");
  EXPECT_EQ(state_.FindByKey("argocd/app"), state_.Find("new"));
  ASSERT_NE(state_.Find("new"), nullptr);
  state_.Untrack("new");
  EXPECT_EQ(state_.FindByKey("argocd/app"), nullptr);
}

TEST_F(DispatchStateTest, UntrackingTheNewResourceFirstLeavesTheKeyWithoutAResource) {
  state_.Track(Resource("old", "argocd", "app"));
  state_.Track(Resource("new", "argocd", "app"));
  state_.Untrack("new");
  EXPECT_EQ(state_.FindByKey("argocd/app"), nullptr);
  ASSERT_NE(state_.Find("old"), nullptr);
  state_.Untrack("old");
  EXPECT_TRUE(state_.keys().empty());
  EXPECT_EQ(state_.size(), 0U);
}

}  // namespace
}  // namespace mmi::dispatcher
