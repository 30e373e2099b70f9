// Writes Application statuses onto the hub: one JSON merge patch of `status` on the main resource
// (Applications have no status subresource), issued on a worker pool so that many run
// concurrently over the client's pooled HTTP/2 connections. Never GETs. The HTTP client already
// honours 429 Retry-After (API Priority and Fairness) and retries 5xx; what still fails comes back
// classified: kOk, kNotFound (the hub Application is gone: count, log, drop), kInvalid (the API
// server refused the body: count, log, drop), kRetry (transient: the caller requeues with backoff).
//
// Thread-safe. `done` runs on a pool thread and must only enqueue. Collaborators are borrowed.
#pragma once

#include <string>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "libs/common/clock.h"
#include "libs/kube/kube_client.h"
#include "nlohmann/json.hpp"
#include "services/status-sink/executor.h"
#include "services/status-sink/metrics.h"

namespace mmi::status_sink {

struct WriterSettings {
  // Recorded in the Application's managedFields for our writes.
  std::string field_manager = "mmi-status-sink";
};

struct WriteOutcome {
  WriteResult result = WriteResult::kOk;
  absl::Status status;  // the error, when not kOk
};

using WriteDone = absl::AnyInvocable<void(WriteOutcome) &&>;

// kOk for OK; kNotFound; kInvalid for kInvalidArgument / kFailedPrecondition / kOutOfRange /
// kUnimplemented; kRetry for everything else (throttling, 5xx, timeouts, RBAC being fixed).
WriteResult ClassifyWriteError(const absl::Status& status);

class Writer {
 public:
  Writer(WriterSettings settings, kube::KubeClient& client, Executor& executor, const Clock& clock,
         SinkMetrics& metrics);

  void Write(std::string hub_namespace, std::string hub_name, nlohmann::json patch, WriteDone done);

 private:
  const WriterSettings settings_;
  kube::KubeClient& client_;
  Executor& executor_;
  const Clock& clock_;
  SinkMetrics& metrics_;
};

// The Application collection on the hub.
kube::ResourceRef ApplicationsRef(std::string hub_namespace);

}  // namespace mmi::status_sink
