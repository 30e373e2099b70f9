#include "libs/argocd_repo/metrics.h"

#include <string>

#include "libs/common/status_label.h"

namespace mmi::argocd_repo {
namespace {

constexpr std::array<std::string_view, 2> kOperations = {"generate_manifest", "resolve_revision"};

}  // namespace

std::string_view RepoServerResultName(const absl::Status& status) {
  // The repo-server answers a manifest it cannot generate with FailedPrecondition (Argo CD's
  // status.Errorf(codes.FailedPrecondition, ...) around the tool's error): a render error.
  if (status.code() == absl::StatusCode::kFailedPrecondition) {
    return "render_error";
  }
  return StatusCodeLabel(status.code());
}

RepoServerMetrics::RepoServerMetrics(prometheus::Registry& registry)
    : requests_(prometheus::BuildCounter()
                    .Name("mmi_repo_server_requests_total")
                    .Help("Calls to Argo CD's repo-server, by operation and result")
                    .Register(registry)) {
  auto& durations = prometheus::BuildHistogram()
                        .Name("mmi_repo_server_request_duration_seconds")
                        .Help("Duration of calls to Argo CD's repo-server")
                        .Register(registry);
  for (size_t i = 0; i < kOperations.size(); ++i) {
    // Renders take from milliseconds (cached) to the 60 s deadline (a cold Helm chart).
    durations_[i] =
        &durations.Add({{"operation", std::string(kOperations[i])}},
                       prometheus::Histogram::BucketBoundaries{0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                               0.5, 1, 2.5, 5, 10, 30, 60});
  }
}

void RepoServerMetrics::RecordCall(RepoServerOperation operation, const absl::Status& status,
                                   std::chrono::steady_clock::duration elapsed) {
  const auto index = static_cast<size_t>(operation);
  requests_
      .Add({{"operation", std::string(kOperations[index])},
            {"result", std::string(RepoServerResultName(status))}})
      .Increment();
  durations_[index]->Observe(std::chrono::duration<double>(elapsed).count());
}

}  // namespace mmi::argocd_repo
