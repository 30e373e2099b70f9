#include "libs/argocd_repo/metrics.h"

#include <gtest/gtest.h>

#include "libs/transport/testing/metric_value.h"

namespace mmi::argocd_repo {
namespace {

using transport::testing::MetricValue;

TEST(RepoServerMetricsTest, CountsCallsByOperationAndResult) {
  prometheus::Registry registry;
  RepoServerMetrics metrics(registry);
  metrics.RecordCall(RepoServerOperation::kGenerateManifest, absl::OkStatus(),
                     std::chrono::milliseconds(20));
  metrics.RecordCall(RepoServerOperation::kGenerateManifest,
                     absl::FailedPreconditionError("broken.yaml"), std::chrono::milliseconds(5));
  metrics.RecordCall(RepoServerOperation::kResolveRevision, absl::UnavailableError("down"),
                     std::chrono::milliseconds(1));
  EXPECT_EQ(MetricValue(registry, "mmi_repo_server_requests_total",
                        {{"operation", "generate_manifest"}, {"result", "ok"}}),
            1);
  EXPECT_EQ(MetricValue(registry, "mmi_repo_server_requests_total",
                        {{"operation", "generate_manifest"}, {"result", "render_error"}}),
            1);
  EXPECT_EQ(MetricValue(registry, "mmi_repo_server_requests_total",
                        {{"operation", "resolve_revision"}, {"result", "unavailable"}}),
            1);
  EXPECT_EQ(MetricValue(registry, "mmi_repo_server_request_duration_seconds",
                        {{"operation", "generate_manifest"}}),
            2);
}

TEST(RepoServerMetricsTest, ResultNamesComeFromAClosedSet) {
  EXPECT_EQ(RepoServerResultName(absl::DeadlineExceededError("")), "deadline_exceeded");
  EXPECT_EQ(RepoServerResultName(absl::ResourceExhaustedError("")), "resource_exhausted");
  EXPECT_EQ(RepoServerResultName(absl::InvalidArgumentError("")), "invalid_argument");
  EXPECT_EQ(RepoServerResultName(absl::InternalError("")), "other");
}

}  // namespace
}  // namespace mmi::argocd_repo
