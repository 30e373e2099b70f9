// The metrics of RepoServerClient implementations, declared in one struct built from an injected
// registry (STYLE.md §8). Labels come from closed sets.
//
//   mmi_repo_server_requests_total{operation,result}   operation: generate_manifest,
//       resolve_revision; result: ok, render_error (the repo-server answered with an error),
//       invalid_argument, unavailable, deadline_exceeded, resource_exhausted, other
//   mmi_repo_server_request_duration_seconds{operation}  the call, request encoding included
#pragma once

#include <array>
#include <chrono>
#include <string_view>

#include "absl/status/status.h"
#include "prometheus/counter.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace mmi::argocd_repo {

enum class RepoServerOperation { kGenerateManifest, kResolveRevision };

// The `result` label of a call's outcome (repo_server_client.h's codes).
std::string_view RepoServerResultName(const absl::Status& status);

// Thread-safe (prometheus-cpp metrics are atomic).
class RepoServerMetrics {
 public:
  explicit RepoServerMetrics(prometheus::Registry& registry);

  void RecordCall(RepoServerOperation operation, const absl::Status& status,
                  std::chrono::steady_clock::duration elapsed);

 private:
  prometheus::Family<prometheus::Counter>& requests_;
  std::array<prometheus::Histogram*, 2> durations_{};
};

}  // namespace mmi::argocd_repo
