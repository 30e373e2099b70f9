// SpecRun: one reconcile of a valid GitOpsCluster spec (SpecReconciler): the SpecResult its
// steps build, their conditions, and the three ways a step stops it (Fail, FailKeeping,
// Transient). Not thread-safe; lives for one reconcile on the gitops-loop.
#pragma once

#include <chrono>
#include <string>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"
#include "services/dispatcher/gitops/reconcile_result.h"

namespace mmi::dispatcher {

class SpecRun {
 public:
  // `key`: the GitOpsCluster's "ns/name" (for the log); `status`: its status as it was.
  SpecRun(std::string key, nlohmann::json status, std::chrono::system_clock::time_point now);

  SpecResult& result() { return result_; }
  WantedSecrets& wanted() { return *result_.wanted; }
  // Sets a condition of the status.
  void Set(const char* condition, const char* value, const char* reason,
           const std::string& message);
  // An answer about the hub: the condition is False until the spec or the hub changes.
  SpecResult Fail(const char* condition, const char* reason, const std::string& message,
                  ReconcileOutcome outcome = ReconcileOutcome::kFailed);
  // As Fail(), keeping what the GitOpsCluster wanted before (its decisions are not usable).
  SpecResult FailKeeping(const char* condition, const char* reason, const std::string& message);
  // A request that failed on the way (not an answer about the hub): keep what we had, retry.
  SpecResult Transient(const std::string& what, const absl::Status& error);

 private:
  std::string key_;
  std::chrono::system_clock::time_point now_;
  SpecResult result_;
};

}  // namespace mmi::dispatcher
