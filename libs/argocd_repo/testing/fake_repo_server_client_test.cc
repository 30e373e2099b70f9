#include "libs/argocd_repo/testing/fake_repo_server_client.h"

#include <gtest/gtest.h>

namespace mmi::argocd_repo::testing {
namespace {

TEST(FakeRepoServerClientTest, AnswersByRequestAndRecordsEveryCall) {
  FakeRepoServerClient fake;
  ManifestRequest a;
  a.body = {{"revision", "a"}};
  ManifestRequest b;
  b.body = {{"revision", "b"}};
  EXPECT_EQ(fake.GenerateManifest(a).status().code(), absl::StatusCode::kUnavailable);
  fake.SetManifests(
      a, RenderedManifests{.manifests = {"{}"}, .revision = "sha-a", .source_type = "Directory"});
  fake.SetDefaultManifests(absl::FailedPreconditionError("broken"));
  EXPECT_EQ(fake.GenerateManifest(a)->revision, "sha-a");
  EXPECT_EQ(fake.GenerateManifest(b).status().code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_EQ(fake.manifest_requests().size(), 3U);
  EXPECT_EQ(fake.manifest_requests()[2], b);

  ResolveRevisionRequest head;
  head.body = {{"ambiguousRevision", "HEAD"}};
  EXPECT_EQ(fake.ResolveRevision(head).status().code(), absl::StatusCode::kFailedPrecondition);
  fake.SetRevision("HEAD", ResolvedRevision{.revision = "sha", .ambiguous_revision = "HEAD (sha)"});
  EXPECT_EQ(fake.ResolveRevision(head)->revision, "sha");
  EXPECT_EQ(fake.resolve_requests().size(), 2U);
}

}  // namespace
}  // namespace mmi::argocd_repo::testing
