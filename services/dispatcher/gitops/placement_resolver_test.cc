// PlacementResolver: every decision page read, missing ManagedClusters reported, through the
// controller.
#include "services/dispatcher/gitops/placement_resolver.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "libs/kube_object/object.h"
#include "services/dispatcher/gitops/gitops_cluster.h"
#include "services/dispatcher/gitops/gitops_cluster_controller.h"
#include "services/dispatcher/gitops/testing/controller_fixture.h"

// In the fixture's namespace: its helpers and using-declarations need no repeating here.
namespace mmi::dispatcher::testing {
namespace {

using PlacementResolverTest = GitOpsHubTest;

TEST_F(PlacementResolverTest, ReadsEveryPageOfEveryPlacementDecision) {
  settings_.decision_page_size = 1;
  CreateHub();
  Create(Decisions(), Decision("all-clusters-decision-1", "all-clusters", {"edge-1"}));
  Create(Decisions(),
         Decision("all-clusters-decision-2", "all-clusters", {"edge-2", "edge-3", ""}));
  Create(Decisions(), Decision("other-decision-1", "other", {"edge-9"}));
  Create(GitOpsClusters(), ExampleGitOpsCluster());
  StartController();

  ASSERT_TRUE(Eventually([&] { return Condition(kCondReady) == "True"; })) << GitOpsStatus();
  EXPECT_TRUE(HasSecret("edge-1"));
  EXPECT_TRUE(HasSecret("edge-2"));
  EXPECT_TRUE(HasSecret("edge-3"));
  EXPECT_FALSE(HasSecret("edge-9"));
  // Two pages, the second asked for with the first page's continue token.
  bool continued = false;
  for (const auto& call : kube_.Calls()) {
    continued |= call.verb == "LIST" && call.ref.resource == "placementdecisions" &&
                 call.ref.namespace_name == kNs && !call.detail.empty();
  }
  EXPECT_TRUE(continued);
  EXPECT_NE(Condition(kCondPlacementResolved, "message").find("3 managed cluster(s) in 2"),
            std::string::npos)
      << GitOpsStatus();
}

TEST_F(PlacementResolverTest, MissingManagedClusterFailsResolutionUntilItExists) {
  CreateHub();
  Create(Decisions(), Decision("all-clusters-decision-1", "all-clusters", {"edge-1", "edge-7"}));
  Create(GitOpsClusters(), ExampleGitOpsCluster());
  StartController();
  ASSERT_TRUE(Eventually([&] { return Condition(kCondPlacementResolved) == "False"; }));
  EXPECT_NE(Condition(kCondPlacementResolved, "message").find("edge-7"), std::string::npos);
  EXPECT_FALSE(HasSecret("edge-1"));

  Create(ManagedClusters(), ManagedCluster("edge-7"));
  EXPECT_TRUE(Eventually([&] { return HasSecret("edge-1") && HasSecret("edge-7"); }));
  EXPECT_TRUE(Eventually([&] { return Condition(kCondReady) == "True"; }));
}

}  // namespace
}  // namespace mmi::dispatcher::testing
