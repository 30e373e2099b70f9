#include "services/dispatcher/gitops/spec_run.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "services/dispatcher/gitops/gitops_cluster.h"
#include "services/dispatcher/gitops/internal/controller_log.h"

namespace mmi::dispatcher {
SpecRun::SpecRun(std::string key, nlohmann::json status, std::chrono::system_clock::time_point now)
    : key_(std::move(key)), now_(now) {
  result_.status = std::move(status);
  result_.wanted.emplace();
}

void SpecRun::Set(const char* condition, const char* value, const char* reason,
                  const std::string& message) {
  SetCondition(result_.status, condition, value, reason, message, now_);
}

SpecResult SpecRun::Fail(const char* condition, const char* reason, const std::string& message,
                         ReconcileOutcome outcome) {
  Set(condition, "False", reason, CapMessage(message));
  result_.status["message"] = CapMessage(message);
  internal::GitOpsClusterLog().Warn(
      "GitOpsCluster not reconciled",
      {{"resource", key_}, {"condition", condition}, {"error", message}});
  result_.outcome = outcome;
  return result_;
}

SpecResult SpecRun::FailKeeping(const char* condition, const char* reason,
                                const std::string& message) {
  result_.wanted.reset();
  return Fail(condition, reason, message);
}

SpecResult SpecRun::Transient(const std::string& what, const absl::Status& error) {
  result_.wanted.reset();
  result_.status["message"] = CapMessage(absl::StrCat(what, ": ", error.ToString()));
  internal::GitOpsClusterLog().Warn(
      "GitOpsCluster reconcile failed; retrying",
      {{"resource", key_}, {"error", absl::StrCat(what, ": ", error.ToString())}});
  result_.outcome = ReconcileOutcome::kError;
  return result_;
}

}  // namespace mmi::dispatcher
