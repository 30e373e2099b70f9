#include "libs/kube/resource.h"

#include <gtest/gtest.h>

namespace mmi::kube {
namespace {

TEST(ResourceRefTest, BuildsNamespacedPathsInNamedGroups) {
  const ResourceRef apps{"argoproj.io", "v1alpha1", "applications", "argocd"};
  EXPECT_EQ(apps.CollectionPath(), "/apis/argoproj.io/v1alpha1/namespaces/argocd/applications");
  EXPECT_EQ(apps.ObjectPath("guestbook"),
            "/apis/argoproj.io/v1alpha1/namespaces/argocd/applications/guestbook");
  EXPECT_EQ(apps.ObjectPath("gitops", "status"),
            "/apis/argoproj.io/v1alpha1/namespaces/argocd/applications/gitops/status");
  EXPECT_EQ(apps.GroupResource(), "applications.argoproj.io");
}

TEST(ResourceRefTest, BuildsCoreAndClusterScopedPaths) {
  const ResourceRef namespaces{"", "v1", "namespaces", ""};
  EXPECT_EQ(namespaces.CollectionPath(), "/api/v1/namespaces");
  EXPECT_EQ(namespaces.ObjectPath("argocd"), "/api/v1/namespaces/argocd");
  EXPECT_EQ(namespaces.GroupResource(), "namespaces");
  const ResourceRef secrets = ResourceRef{"", "v1", "secrets", ""}.InNamespace("argocd");
  EXPECT_EQ(secrets.CollectionPath(), "/api/v1/namespaces/argocd/secrets");
}

TEST(ResourceRefTest, EscapesNamesThatWouldBreakThePath) {
  const ResourceRef things{"example.com", "v1", "things", ""};
  EXPECT_EQ(things.ObjectPath("a/b c"), "/apis/example.com/v1/things/a%2Fb%20c");
}

TEST(BuildQueryTest, PercentEncodesSelectorsAndKeepsOrder) {
  EXPECT_EQ(BuildQuery({}), "");
  EXPECT_EQ(BuildQuery({{"labelSelector", "app=x,tier in (a,b)"}, {"limit", "500"}}),
            "?labelSelector=app%3Dx%2Ctier%20in%20%28a%2Cb%29&limit=500");
  EXPECT_EQ(PercentEncode("AZaz09-._~"), "AZaz09-._~");
}

}  // namespace
}  // namespace mmi::kube
