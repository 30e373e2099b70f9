// Writes Application statuses onto the hub: one JSON merge patch of `status` on the main resource
// (Applications have no status subresource), issued on a worker pool so that many run
// concurrently over the client's pooled HTTP/2 connections. Never GETs. The HTTP client already
// honours 429 Retry-After (API Priority and Fairness) and retries 5xx; what still fails comes back
// classified: kOk, kNotFound (the hub Application is gone: count, log, drop), kInvalid (the API
// server refused the body: count, log, drop), kRetry (transient: the caller requeues with backoff).
//
// Thread-safe. `done` runs on a pool thread and must only enqueue. Collaborators are borrowed.
#pragma once

#include <chrono>
#include <string>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "libs/common/clock.h"
#include "libs/common/executor.h"
#include "libs/kube/kube_client.h"
#include "nlohmann/json.hpp"
#include "services/status-sink/metrics/metrics.h"

namespace mmi::status_sink {

struct WriterSettings {
  // Recorded in the Application's managedFields for our writes.
  std::string field_manager = "mmi-status-sink";
};

struct WriteOutcome {
  WriteResult result = WriteResult::kOk;
  absl::Status status;  // the error, when not kOk
  // WriteProgressingFirst only: the Progressing write landed (whatever became of the second).
  bool progressing_written = false;
};

using WriteDone = absl::AnyInvocable<void(WriteOutcome) &&>;

// kOk for OK; kNotFound; kInvalid for kInvalidArgument / kFailedPrecondition / kOutOfRange /
// kUnimplemented; kRetry for everything else (throttling, 5xx, timeouts, RBAC being fixed).
WriteResult ClassifyWriteError(const absl::Status& status);

class Writer {
 public:
  Writer(WriterSettings settings, kube::KubeClient& client, Executor& executor, const Clock& clock,
         SinkMetrics& metrics);

  // One merge patch; counted in mmi_status_updates_total.
  void Write(std::string hub_namespace, std::string hub_name, nlohmann::json patch, WriteDone done);
  // Two merge patches in order on one pool thread: ProgressingPatch(patch) first (counted in
  // mmi_status_progressing_writes_total), then `patch` once the first landed (counted in
  // mmi_status_updates_total). `done` gets the first failure, or the second write's outcome.
  void WriteProgressingFirst(std::string hub_namespace, std::string hub_name, nlohmann::json patch,
                             WriteDone done);

 private:
  // One PATCH, classified and timed (not yet counted).
  WriteOutcome Patch(const std::string& hub_namespace, const std::string& hub_name,
                     const nlohmann::json& patch, std::chrono::steady_clock::duration& elapsed);

  const WriterSettings settings_;
  kube::KubeClient& client_;
  Executor& executor_;
  const Clock& clock_;
  SinkMetrics& metrics_;
};

// The Application collection on the hub.
kube::ResourceRef ApplicationsRef(std::string hub_namespace);

}  // namespace mmi::status_sink
