#include "services/dispatcher/gitops/appset_resource_writer.h"

#include <gtest/gtest.h>

#include "libs/kube/testing/fake_kube_client.h"
#include "services/dispatcher/gitops/gitops_cluster.h"

namespace mmi::dispatcher {
namespace {

using kube::ResourceRef;
using kube::testing::FakeKubeClient;
using nlohmann::json;

constexpr char kNs[] = "openshift-gitops";

ResourceRef Core(const char* resource) { return {"", "v1", resource, kNs}; }
ResourceRef Rbac(const char* resource) {
  return {"rbac.authorization.k8s.io", "v1", resource, kNs};
}

TEST(AppSetResourceWriterTest, CreatesTheConfigMapsAndPlacementRbacOnceAndLeavesThemThen) {
  FakeKubeClient hub;
  AppSetResourceWriter writer(hub, "mmi-dispatcher");
  ASSERT_TRUE(writer.Ensure(kNs).ok());
  for (const json& cm : DuckTypeConfigMaps(kNs)) {
    EXPECT_TRUE(hub.Get(Core("configmaps"), cm["metadata"]["name"].get<std::string>()).ok());
  }
  EXPECT_TRUE(hub.Get(Rbac("roles"), AppSetPlacementRbacName(kNs)).ok());
  EXPECT_TRUE(hub.Get(Rbac("rolebindings"), AppSetPlacementRbacName(kNs)).ok());
  const size_t created = hub.CountCalls("CREATE");
  EXPECT_EQ(created, DuckTypeConfigMaps(kNs).size() + 2);

  ASSERT_TRUE(writer.Ensure(kNs).ok());
  EXPECT_EQ(hub.CountCalls("CREATE"), created) << "create-only: nothing written again";
}

TEST(AppSetResourceWriterTest, AFailedReadIsReturnedAndNothingIsCreated) {
  FakeKubeClient hub;
  AppSetResourceWriter writer(hub, "mmi-dispatcher");
  hub.FailNext("GET", absl::UnavailableError("hub away"));
  EXPECT_TRUE(absl::IsUnavailable(writer.Ensure(kNs)));
  EXPECT_EQ(hub.CountCalls("CREATE"), 0U);
}

}  // namespace
}  // namespace mmi::dispatcher
