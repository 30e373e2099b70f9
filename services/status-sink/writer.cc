#include "services/status-sink/writer.h"

#include <utility>

namespace mmi::status_sink {

kube::ResourceRef ApplicationsRef(std::string hub_namespace) {
  return kube::ResourceRef{"argoproj.io", "v1alpha1", "applications", std::move(hub_namespace)};
}

WriteResult ClassifyWriteError(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return WriteResult::kOk;
    case absl::StatusCode::kNotFound:
      return WriteResult::kNotFound;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kUnimplemented:
      return WriteResult::kInvalid;
    default:
      return WriteResult::kRetry;
  }
}

Writer::Writer(WriterSettings settings, kube::KubeClient& client, Executor& executor,
               const Clock& clock, SinkMetrics& metrics)
    : settings_(std::move(settings)),
      client_(client),
      executor_(executor),
      clock_(clock),
      metrics_(metrics) {}

void Writer::Write(std::string hub_namespace, std::string hub_name, nlohmann::json patch,
                   WriteDone done) {
  executor_.Submit([this, ns = std::move(hub_namespace), name = std::move(hub_name),
                    patch = std::move(patch), done = std::move(done)]() mutable {
    const auto start = clock_.MonotonicNow();
    kube::PatchOptions options;
    options.field_manager = settings_.field_manager;
    auto result =
        client_.Patch(ApplicationsRef(ns), name, kube::PatchType::kMerge, patch, options, "");
    WriteOutcome outcome;
    outcome.result = ClassifyWriteError(result.status());
    if (!result.ok()) {
      outcome.status = result.status();
    }
    metrics_.Write(outcome.result, clock_.MonotonicNow() - start);
    std::move(done)(std::move(outcome));
  });
}

}  // namespace mmi::status_sink
