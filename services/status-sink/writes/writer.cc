#include "services/status-sink/writes/writer.h"

#include <utility>

#include "services/status-sink/writes/status_patch.h"

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

WriteOutcome Writer::Patch(const std::string& hub_namespace, const std::string& hub_name,
                           const nlohmann::json& patch,
                           std::chrono::steady_clock::duration& elapsed) {
  const auto start = clock_.MonotonicNow();
  kube::PatchOptions options;
  options.field_manager = settings_.field_manager;
  auto result = client_.Patch(ApplicationsRef(hub_namespace), hub_name, kube::PatchType::kMerge,
                              patch, options, "");
  elapsed = clock_.MonotonicNow() - start;
  WriteOutcome outcome;
  outcome.result = ClassifyWriteError(result.status());
  if (!result.ok()) {
    outcome.status = result.status();
  }
  return outcome;
}

void Writer::Write(std::string hub_namespace, std::string hub_name, nlohmann::json patch,
                   WriteDone done) {
  executor_.Post([this, ns = std::move(hub_namespace), name = std::move(hub_name),
                  patch = std::move(patch), done = std::move(done)]() mutable {
    std::chrono::steady_clock::duration elapsed{};
    WriteOutcome outcome = Patch(ns, name, patch, elapsed);
    metrics_.Write(outcome.result, elapsed);
    std::move(done)(std::move(outcome));
  });
}

void Writer::WriteProgressingFirst(std::string hub_namespace, std::string hub_name,
                                   nlohmann::json patch, WriteDone done) {
  executor_.Post([this, ns = std::move(hub_namespace), name = std::move(hub_name),
                  patch = std::move(patch), done = std::move(done)]() mutable {
    // Sequential on this thread, so the hub sees Progressing strictly before Healthy.
    std::chrono::steady_clock::duration elapsed{};
    WriteOutcome first = Patch(ns, name, ProgressingPatch(patch), elapsed);
    metrics_.ProgressingWrite(first.result, elapsed);
    if (first.result != WriteResult::kOk) {
      std::move(done)(std::move(first));
      return;
    }
    WriteOutcome second = Patch(ns, name, patch, elapsed);
    metrics_.Write(second.result, elapsed);
    second.progressing_written = true;
    std::move(done)(std::move(second));
  });
}

}  // namespace mmi::status_sink
