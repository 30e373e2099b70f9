#include "services/status-sink/manifests/resource_health.h"

#include <array>
#include <cstdint>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "libs/common/status_macros.h"
#include "libs/kube_object/object.h"
#include "libs/status_feedback/feedback_rules.h"
#include "nlohmann/json.hpp"

namespace mmi::status_sink {
namespace {

using cloudevents::FeedbackValue;
using cloudevents::FieldValueType;
namespace fb = status_feedback;

// Typed reads of the reported values by name; absent values read as Go's zero values, as the
// typed objects gitops-engine converts to do.
class Feedback {
 public:
  explicit Feedback(const std::vector<FeedbackValue>& values) : values_(values) {}

  absl::StatusOr<std::optional<std::int64_t>> OptionalInt(std::string_view name) const {
    const FeedbackValue* value = Find(name);
    if (value == nullptr) {
      return std::nullopt;
    }
    if (value->field_value.type != FieldValueType::kInteger) {
      return WrongType(*value, FieldValueType::kInteger);
    }
    return value->field_value.integer;
  }
  absl::StatusOr<std::int64_t> Int(std::string_view name) const {
    absl::StatusOr<std::optional<std::int64_t>> value = OptionalInt(name);
    if (!value.ok()) {
      return value.status();
    }
    return value->value_or(0);
  }
  absl::StatusOr<std::string> String(std::string_view name) const {
    const FeedbackValue* value = Find(name);
    if (value == nullptr) {
      return std::string();
    }
    if (value->field_value.type != FieldValueType::kString) {
      return WrongType(*value, FieldValueType::kString);
    }
    return value->field_value.string;
  }
  absl::StatusOr<bool> Bool(std::string_view name) const {
    const FeedbackValue* value = Find(name);
    if (value == nullptr) {
      return false;
    }
    if (value->field_value.type != FieldValueType::kBoolean) {
      return WrongType(*value, FieldValueType::kBoolean);
    }
    return value->field_value.boolean;
  }
  // A JsonRaw value parsed; null when absent. `want_array`: an array, else an object.
  absl::StatusOr<nlohmann::json> Json(std::string_view name, bool want_array) const {
    const FeedbackValue* value = Find(name);
    if (value == nullptr) {
      return nlohmann::json();
    }
    if (value->field_value.type != FieldValueType::kJsonRaw) {
      return WrongType(*value, FieldValueType::kJsonRaw);
    }
    const nlohmann::json& parsed = value->field_value.json_raw_value;
    if (want_array ? !parsed.is_array() : !parsed.is_object()) {
      return absl::InvalidArgumentError(absl::StrCat("status feedback \"", std::string(name),
                                                     "\" is not a JSON ",
                                                     want_array ? "array" : "object"));
    }
    return parsed;
  }

 private:
  const FeedbackValue* Find(std::string_view name) const {
    for (const FeedbackValue& value : values_) {
      if (value.name == name) {
        return &value;
      }
    }
    return nullptr;
  }
  static absl::Status WrongType(const FeedbackValue& value, FieldValueType want) {
    return absl::InvalidArgumentError(
        absl::StrCat("status feedback \"", value.name, "\" is ",
                     std::string(cloudevents::FieldValueTypeName(value.field_value.type)),
                     ", want ", std::string(cloudevents::FieldValueTypeName(want))));
  }

  const std::vector<FeedbackValue>& values_;
};

ResourceHealth Health(HealthCode code, std::string message = "") {
  return ResourceHealth{.status = code, .message = std::move(message)};
}

// The condition of that type in a JSON conditions array, or nullptr.
const nlohmann::json* FindCondition(const nlohmann::json& conditions, std::string_view type) {
  if (!conditions.is_array()) {
    return nullptr;
  }
  for (const nlohmann::json& condition : conditions) {
    if (kube::StringAt(condition, "type") == type) {
      return &condition;
    }
  }
  return nullptr;
}

absl::StatusOr<ResourceHealth> DeploymentHealth(const Feedback& f, std::string_view name) {
  ASSIGN_OR_RETURN(auto paused, f.Bool(fb::kPaused));
  if (paused) {
    return Health(HealthCode::kSuspended, "Deployment is paused");
  }
  ASSIGN_OR_RETURN(auto generation, f.Int(fb::kGeneration));
  ASSIGN_OR_RETURN(auto observed, f.Int(fb::kObservedGeneration));
  if (generation > observed) {
    return Health(HealthCode::kProgressing,
                  "Waiting for rollout to finish: observed deployment generation less than "
                  "desired generation");
  }
  ASSIGN_OR_RETURN(auto conditions, f.Json(fb::kConditions, /*want_array=*/true));
  const nlohmann::json* progressing = FindCondition(conditions, "Progressing");
  if (progressing != nullptr &&
      kube::StringAt(*progressing, "reason") == "ProgressDeadlineExceeded") {
    return Health(HealthCode::kDegraded, absl::StrCat("Deployment \"", std::string(name),
                                                      "\" exceeded its progress deadline"));
  }
  ASSIGN_OR_RETURN(auto desired, f.OptionalInt(fb::kDesiredReplicas));
  ASSIGN_OR_RETURN(auto updated, f.Int(fb::kUpdatedReplicas));
  ASSIGN_OR_RETURN(auto replicas, f.Int(fb::kReplicas));
  ASSIGN_OR_RETURN(auto available, f.Int(fb::kAvailableReplicas));
  if (desired.has_value() && updated < *desired) {
    return Health(HealthCode::kProgressing,
                  absl::StrCat("Waiting for rollout to finish: ", updated, " out of ", *desired,
                               " new replicas have been updated..."));
  }
  if (replicas > updated) {
    return Health(HealthCode::kProgressing,
                  absl::StrCat("Waiting for rollout to finish: ", replicas - updated,
                               " old replicas are pending termination..."));
  }
  if (available < updated) {
    return Health(HealthCode::kProgressing,
                  absl::StrCat("Waiting for rollout to finish: ", available, " of ", updated,
                               " updated replicas are available..."));
  }
  return Health(HealthCode::kHealthy);
}

absl::StatusOr<ResourceHealth> StatefulSetHealth(const Feedback& f) {
  ASSIGN_OR_RETURN(auto generation, f.Int(fb::kGeneration));
  ASSIGN_OR_RETURN(auto observed, f.Int(fb::kObservedGeneration));
  if (observed == 0 || generation > observed) {
    return Health(HealthCode::kProgressing,
                  "Waiting for statefulset spec update to be observed...");
  }
  ASSIGN_OR_RETURN(auto desired, f.OptionalInt(fb::kDesiredReplicas));
  ASSIGN_OR_RETURN(auto ready, f.Int(fb::kReadyReplicas));
  if (desired.has_value() && ready < *desired) {
    return Health(HealthCode::kProgressing,
                  absl::StrCat("Waiting for ", *desired - ready, " pods to be ready..."));
  }
  ASSIGN_OR_RETURN(auto strategy, f.Json(fb::kUpdateStrategy, /*want_array=*/false));
  ASSIGN_OR_RETURN(auto updated, f.Int(fb::kUpdatedReplicas));
  const std::string type = kube::StringAt(strategy, "type");
  const nlohmann::json& rolling = kube::FieldAt(strategy, "rollingUpdate");
  if (type == "RollingUpdate" && rolling.is_object()) {
    const nlohmann::json& partition = kube::FieldAt(rolling, "partition");
    if (desired.has_value() && partition.is_number_integer()) {
      const std::int64_t want = *desired - partition.get<std::int64_t>();
      if (updated < want) {
        return Health(HealthCode::kProgressing,
                      absl::StrCat("Waiting for partitioned roll out to finish: ", updated,
                                   " out of ", want, " new pods have been updated..."));
      }
    }
    return Health(HealthCode::kHealthy, absl::StrCat("partitioned roll out complete: ", updated,
                                                     " new pods have been updated..."));
  }
  if (type == "OnDelete") {
    return Health(HealthCode::kHealthy, absl::StrCat("statefulset has ", ready, " ready pods"));
  }
  ASSIGN_OR_RETURN(auto update_revision, f.String(fb::kUpdateRevision));
  ASSIGN_OR_RETURN(auto current_revision, f.String(fb::kCurrentRevision));
  if (update_revision != current_revision) {
    return Health(HealthCode::kProgressing,
                  absl::StrCat("waiting for statefulset rolling update to complete ", updated,
                               " pods at revision ", update_revision, "..."));
  }
  ASSIGN_OR_RETURN(auto current, f.Int(fb::kCurrentReplicas));
  return Health(HealthCode::kHealthy, absl::StrCat("statefulset rolling update complete ", current,
                                                   " pods at revision ", current_revision, "..."));
}

absl::StatusOr<ResourceHealth> DaemonSetHealth(const Feedback& f, std::string_view name) {
  ASSIGN_OR_RETURN(auto generation, f.Int(fb::kGeneration));
  ASSIGN_OR_RETURN(auto observed, f.Int(fb::kObservedGeneration));
  if (generation > observed) {
    return Health(HealthCode::kProgressing,
                  "Waiting for rollout to finish: observed daemon set generation less than "
                  "desired generation");
  }
  ASSIGN_OR_RETURN(auto strategy, f.Json(fb::kUpdateStrategy, /*want_array=*/false));
  ASSIGN_OR_RETURN(auto desired, f.Int(fb::kDesiredNumberScheduled));
  ASSIGN_OR_RETURN(auto updated, f.Int(fb::kUpdatedNumberScheduled));
  ASSIGN_OR_RETURN(auto available, f.Int(fb::kNumberAvailable));
  if (kube::StringAt(strategy, "type") == "OnDelete") {
    return Health(HealthCode::kHealthy, absl::StrCat("daemon set ", updated, " out of ", desired,
                                                     " new pods have been updated"));
  }
  if (updated < desired) {
    return Health(HealthCode::kProgressing,
                  absl::StrCat("Waiting for daemon set \"", std::string(name),
                               "\" rollout to finish: ", updated, " out of ", desired,
                               " new pods have been updated..."));
  }
  if (available < desired) {
    return Health(HealthCode::kProgressing,
                  absl::StrCat("Waiting for daemon set \"", std::string(name),
                               "\" rollout to finish: ", available, " of ", desired,
                               " updated pods are available..."));
  }
  return Health(HealthCode::kHealthy);
}

absl::StatusOr<ResourceHealth> ReplicaSetHealth(const Feedback& f) {
  ASSIGN_OR_RETURN(auto generation, f.Int(fb::kGeneration));
  ASSIGN_OR_RETURN(auto observed, f.Int(fb::kObservedGeneration));
  if (generation > observed) {
    return Health(HealthCode::kProgressing,
                  "Waiting for rollout to finish: observed replica set generation less than "
                  "desired generation");
  }
  ASSIGN_OR_RETURN(auto conditions, f.Json(fb::kConditions, /*want_array=*/true));
  const nlohmann::json* failure = FindCondition(conditions, "ReplicaFailure");
  if (failure != nullptr && kube::StringAt(*failure, "status") == "True") {
    return Health(HealthCode::kDegraded, kube::StringAt(*failure, "message"));
  }
  ASSIGN_OR_RETURN(auto desired, f.OptionalInt(fb::kDesiredReplicas));
  ASSIGN_OR_RETURN(auto available, f.Int(fb::kAvailableReplicas));
  if (desired.has_value() && available < *desired) {
    return Health(HealthCode::kProgressing,
                  absl::StrCat("Waiting for rollout to finish: ", available, " out of ", *desired,
                               " new replicas are available..."));
  }
  return Health(HealthCode::kHealthy);
}

absl::StatusOr<ResourceHealth> JobHealth(const Feedback& f) {
  ASSIGN_OR_RETURN(auto conditions, f.Json(fb::kConditions, /*want_array=*/true));
  bool failed = false;
  bool complete = false;
  bool suspended = false;
  std::string fail_message;
  std::string message;
  if (conditions.is_array()) {
    for (const nlohmann::json& condition : conditions) {
      const std::string type = kube::StringAt(condition, "type");
      if (type == "Failed") {
        failed = complete = true;
        fail_message = kube::StringAt(condition, "message");
      } else if (type == "Complete") {
        complete = true;
        message = kube::StringAt(condition, "message");
      } else if (type == "Suspended") {
        complete = true;
        message = kube::StringAt(condition, "message");
        suspended = kube::StringAt(condition, "status") == "True";
      }
    }
  } else {
    // Only the WellKnownStatus value: the Complete condition's status when it exists.
    ASSIGN_OR_RETURN(auto job_complete, f.String(fb::kJobComplete));
    complete = !job_complete.empty();
  }
  if (!complete) {
    return Health(HealthCode::kProgressing, message);
  }
  if (failed) {
    return Health(HealthCode::kDegraded, fail_message);
  }
  if (suspended) {
    return Health(HealthCode::kSuspended, fail_message);
  }
  return Health(HealthCode::kHealthy, message);
}

bool IsWaitingError(std::string_view reason) {
  return reason.starts_with("Err") || reason.ends_with("Error") || reason.ends_with("BackOff");
}

// The first failure message of a terminated container, as gitops-engine's getFailMessage.
std::string FailMessage(const nlohmann::json& status) {
  const nlohmann::json& terminated = kube::ObjectAt(kube::ObjectAt(status, "state"), "terminated");
  if (terminated.empty()) {
    return "";
  }
  if (const std::string message = kube::StringAt(terminated, "message"); !message.empty()) {
    return message;
  }
  if (kube::StringAt(terminated, "reason") == "OOMKilled") {
    return "OOMKilled";
  }
  const nlohmann::json& code = kube::FieldAt(terminated, "exitCode");
  if (code.is_number_integer() && code.get<std::int64_t>() != 0) {
    return absl::StrCat("container \"", kube::StringAt(status, "name"), "\" failed with exit code ",
                        code.get<std::int64_t>());
  }
  return "";
}

absl::StatusOr<ResourceHealth> PodHealth(const Feedback& f) {
  ASSIGN_OR_RETURN(auto restart_policy, f.String(fb::kRestartPolicy));
  if (restart_policy.empty()) {
    restart_policy = "Always";  // the API server's default
  }
  ASSIGN_OR_RETURN(auto containers, f.Json(fb::kContainerStatuses, /*want_array=*/true));
  ASSIGN_OR_RETURN(auto init_containers, f.Json(fb::kInitContainerStatuses, /*want_array=*/true));
  ASSIGN_OR_RETURN(auto message, f.String(fb::kMessage));
  const nlohmann::json no_containers = nlohmann::json::array();
  const nlohmann::json& statuses = containers.is_array() ? containers : no_containers;
  if (restart_policy == "Always") {
    std::vector<std::string> messages;
    for (const nlohmann::json& status : statuses) {
      const nlohmann::json& waiting = kube::ObjectAt(kube::ObjectAt(status, "state"), "waiting");
      if (!waiting.empty() && IsWaitingError(kube::StringAt(waiting, "reason"))) {
        messages.push_back(kube::StringAt(waiting, "message"));
      }
    }
    if (!messages.empty()) {
      return Health(HealthCode::kDegraded, absl::StrJoin(messages, ", "));
    }
  }
  ASSIGN_OR_RETURN(auto phase, f.String(fb::kPodPhase));
  if (phase == "Pending") {
    return Health(HealthCode::kProgressing, message);
  }
  if (phase == "Succeeded") {
    return Health(HealthCode::kHealthy, message);
  }
  if (phase == "Failed") {
    if (!message.empty()) {
      return Health(HealthCode::kDegraded, message);
    }
    for (const nlohmann::json* list :
         std::array<const nlohmann::json*, 2>{&init_containers, &statuses}) {
      if (!list->is_array()) {
        continue;
      }
      for (const nlohmann::json& status : *list) {
        if (std::string fail = FailMessage(status); !fail.empty()) {
          return Health(HealthCode::kDegraded, std::move(fail));
        }
      }
    }
    return Health(HealthCode::kDegraded);
  }
  if (phase == "Running") {
    if (restart_policy != "Always") {
      return Health(HealthCode::kProgressing, message);  // finite pods, typically hooks
    }
    ASSIGN_OR_RETURN(auto ready, f.String(fb::kPodReady));
    if (ready == "True") {
      return Health(HealthCode::kHealthy, message);
    }
    for (const nlohmann::json& status : statuses) {
      if (!kube::ObjectAt(kube::ObjectAt(status, "lastState"), "terminated").empty()) {
        return Health(HealthCode::kDegraded, message);
      }
    }
    return Health(HealthCode::kProgressing, message);
  }
  return Health(HealthCode::kUnknown, message);
}

absl::StatusOr<ResourceHealth> PvcHealth(const Feedback& f) {
  ASSIGN_OR_RETURN(auto phase, f.String(fb::kPhase));
  if (phase == "Lost") {
    return Health(HealthCode::kDegraded);
  }
  if (phase == "Pending") {
    return Health(HealthCode::kProgressing);
  }
  if (phase == "Bound") {
    return Health(HealthCode::kHealthy);
  }
  return Health(HealthCode::kUnknown);
}

absl::StatusOr<ResourceHealth> LoadBalancerHealth(const Feedback& f, bool needs_ingress) {
  if (!needs_ingress) {
    return Health(HealthCode::kHealthy);
  }
  ASSIGN_OR_RETURN(auto ingress, f.Json(fb::kLoadBalancerIngress, /*want_array=*/true));
  return Health(ingress.is_array() && !ingress.empty() ? HealthCode::kHealthy
                                                       : HealthCode::kProgressing);
}

absl::StatusOr<ResourceHealth> ServiceHealth(const Feedback& f) {
  ASSIGN_OR_RETURN(auto type, f.String(fb::kServiceType));
  return LoadBalancerHealth(f, type == "LoadBalancer");
}

absl::StatusOr<ResourceHealth> ApiServiceHealth(const Feedback& f) {
  ASSIGN_OR_RETURN(auto conditions, f.Json(fb::kConditions, /*want_array=*/true));
  const nlohmann::json* available = FindCondition(conditions, "Available");
  if (available == nullptr) {
    return Health(HealthCode::kProgressing, "Waiting to be processed");
  }
  std::string message = absl::StrCat(kube::StringAt(*available, "reason"), ": ",
                                     kube::StringAt(*available, "message"));
  return Health(kube::StringAt(*available, "status") == "True" ? HealthCode::kHealthy
                                                               : HealthCode::kProgressing,
                std::move(message));
}

enum class Check {
  kNone,
  kDeployment,
  kStatefulSet,
  kDaemonSet,
  kReplicaSet,
  kJob,
  kPod,
  kPvc,
  kService,
  kIngress,
  kApiService
};

Check CheckFor(std::string_view group, std::string_view kind) {
  if (group == "apps") {
    if (kind == "Deployment") {
      return Check::kDeployment;
    }
    if (kind == "StatefulSet") {
      return Check::kStatefulSet;
    }
    if (kind == "DaemonSet") {
      return Check::kDaemonSet;
    }
    if (kind == "ReplicaSet") {
      return Check::kReplicaSet;
    }
  } else if (group == "batch" && kind == "Job") {
    return Check::kJob;
  } else if (group.empty()) {
    if (kind == "Pod") {
      return Check::kPod;
    }
    if (kind == "PersistentVolumeClaim") {
      return Check::kPvc;
    }
    if (kind == "Service") {
      return Check::kService;
    }
  } else if ((group == "networking.k8s.io" || group == "extensions") && kind == "Ingress") {
    return Check::kIngress;
  } else if (group == "apiregistration.k8s.io" && kind == "APIService") {
    return Check::kApiService;
  }
  return Check::kNone;
}

}  // namespace

std::string_view HealthName(HealthCode code) {
  static constexpr std::array<std::string_view, 6> kNames = {"Healthy", "Suspended", "Progressing",
                                                             "Missing", "Degraded",  "Unknown"};
  return kNames.at(static_cast<std::size_t>(code));
}

bool IsWorse(HealthCode current, HealthCode candidate) {
  return static_cast<int>(candidate) > static_cast<int>(current);
}

bool HasHealthCheck(std::string_view group, std::string_view kind) {
  return CheckFor(group, kind) != Check::kNone;
}

std::optional<ResourceHealth> HealthFromFeedback(std::string_view group, std::string_view kind,
                                                 std::string_view name,
                                                 const ReportedFeedback& feedback) {
  const Check check = CheckFor(group, kind);
  if (check == Check::kNone) {
    return std::nullopt;
  }
  static const std::vector<FeedbackValue> kNoValues;
  const std::vector<FeedbackValue>& values =
      feedback.values != nullptr ? *feedback.values : kNoValues;
  if (values.empty() && !feedback.synced) {
    return Health(HealthCode::kProgressing, "Waiting for status feedback from the work agent");
  }
  const Feedback f(values);
  absl::StatusOr<ResourceHealth> health;
  switch (check) {
    case Check::kDeployment:
      health = DeploymentHealth(f, name);
      break;
    case Check::kStatefulSet:
      health = StatefulSetHealth(f);
      break;
    case Check::kDaemonSet:
      health = DaemonSetHealth(f, name);
      break;
    case Check::kReplicaSet:
      health = ReplicaSetHealth(f);
      break;
    case Check::kJob:
      health = JobHealth(f);
      break;
    case Check::kPod:
      health = PodHealth(f);
      break;
    case Check::kPvc:
      health = PvcHealth(f);
      break;
    case Check::kService:
      health = ServiceHealth(f);
      break;
    case Check::kIngress:
      health = LoadBalancerHealth(f, /*needs_ingress=*/true);
      break;
    case Check::kApiService:
      health = ApiServiceHealth(f);
      break;
    case Check::kNone:
      return std::nullopt;
  }
  if (!health.ok()) {
    return Health(HealthCode::kUnknown, std::string(health.status().message()));
  }
  return *std::move(health);
}

}  // namespace mmi::status_sink
