#include "services/status-sink/manifests/application_status.h"

#include <algorithm>
#include <cstddef>
#include <string_view>
#include <tuple>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "libs/common/status_macros.h"
#include "libs/kube_object/object.h"
#include "services/status-sink/manifests/app_health.h"
#include "services/status-sink/manifests/images.h"
#include "services/status-sink/manifests/resource_health.h"

namespace mmi::status_sink {
namespace {

using cloudevents::Condition;
using cloudevents::ManifestCondition;

constexpr std::string_view kSynced = "Synced";
constexpr std::string_view kOutOfSync = "OutOfSync";
constexpr std::string_view kUnknown = "Unknown";
// Apply failures named in one SyncError message; the rest are counted.
constexpr std::size_t kMaxNamedFailures = 3;

// One rendered manifest with what the agent says about it.
struct Row {
  ManagedResource resource;
  int sync_wave = 0;
  bool synced = false;          // applied at the bundle generation
  std::string apply_failure;    // the Applied=False message at the bundle generation
  std::string applied_message;  // the Applied=True message at the bundle generation
  std::optional<std::chrono::system_clock::time_point> applied_at;
};

absl::Status CheckManifest(const nlohmann::json& manifest, std::size_t index) {
  const std::string at = absl::StrCat("bundle.manifests[", index, "]");
  if (!manifest.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(at, " is not an object"));
  }
  if (kube::StringAt(manifest, "apiVersion").empty()) {
    return absl::InvalidArgumentError(absl::StrCat(at, ".apiVersion is missing"));
  }
  if (kube::StringAt(manifest, "kind").empty()) {
    return absl::InvalidArgumentError(absl::StrCat(at, ".kind is missing"));
  }
  if (kube::StringAt(kube::Metadata(manifest), "name").empty()) {
    return absl::InvalidArgumentError(absl::StrCat(at, ".metadata.name is missing"));
  }
  return absl::OkStatus();
}

// "apps/v1" -> {"apps", "v1"}; "v1" -> {"", "v1"}.
std::pair<std::string, std::string> SplitApiVersion(const std::string& api_version) {
  const std::size_t slash = api_version.find('/');
  if (slash == std::string::npos) {
    return {"", api_version};
  }
  return {api_version.substr(0, slash), api_version.substr(slash + 1)};
}

// The agent's entry for the manifest at `ordinal`: by ordinal when kind and name agree, else by
// group, kind, namespace (when the manifest names one) and name.
const ManifestCondition* ReportedFor(const cloudevents::ManifestBundleStatus* status,
                                     std::size_t ordinal, const ManagedResource& resource) {
  if (status == nullptr) {
    return nullptr;
  }
  auto same = [&](const cloudevents::ManifestResourceMeta& meta) {
    return meta.group == resource.group && meta.kind == resource.kind &&
           meta.name == resource.name &&
           (resource.namespace_.empty() || meta.namespace_ == resource.namespace_);
  };
  for (const ManifestCondition& reported : status->resource_status) {
    if (static_cast<std::size_t>(reported.resource_meta.ordinal) == ordinal &&
        same(reported.resource_meta)) {
      return &reported;
    }
  }
  for (const ManifestCondition& reported : status->resource_status) {
    if (same(reported.resource_meta)) {
      return &reported;
    }
  }
  return nullptr;
}

bool IsTrue(const Condition* condition) {
  return condition != nullptr && condition->status == cloudevents::kConditionTrue;
}

Row RowFor(const nlohmann::json& manifest, std::size_t ordinal, const RenderedBundle& bundle,
           const std::optional<AgentReport>& report) {
  Row row;
  ManagedResource& r = row.resource;
  std::tie(r.group, r.version) = SplitApiVersion(kube::StringAt(manifest, "apiVersion"));
  r.kind = kube::StringAt(manifest, "kind");
  r.name = kube::StringAt(kube::Metadata(manifest), "name");
  r.namespace_ = kube::StringAt(kube::Metadata(manifest), "namespace");
  r.hook = IsHook(manifest);
  r.skipped = IsSkipped(manifest);
  r.ignore_health = kube::Annotation(manifest, "argocd.argoproj.io/ignore-healthcheck") == "true";
  int wave = 0;
  if (absl::SimpleAtoi(kube::Annotation(manifest, "argocd.argoproj.io/sync-wave"), &wave)) {
    row.sync_wave = wave;
  }

  const ManifestCondition* reported =
      ReportedFor(report.has_value() ? report->status : nullptr, ordinal, r);
  if (reported == nullptr) {
    return row;
  }
  if (r.namespace_.empty()) {
    r.namespace_ = reported->resource_meta.namespace_;  // defaulted by the agent's apply
  }
  const Condition* applied = cloudevents::FindCondition(reported->conditions, "Applied");
  const Condition* available = cloudevents::FindCondition(reported->conditions, "Available");
  const Condition* feedback_synced =
      cloudevents::FindCondition(reported->conditions, "StatusFeedbackSynced");
  r.live = IsTrue(applied) || IsTrue(available);
  if (applied != nullptr) {
    const std::int64_t observed =
        applied->observed_generation != 0 ? applied->observed_generation : report->generation;
    if (observed == bundle.generation) {
      if (IsTrue(applied)) {
        row.synced = true;
        row.applied_message = applied->message;
        if (applied->last_transition_time.has_value()) {
          row.applied_at = std::chrono::time_point_cast<std::chrono::system_clock::duration>(
              *applied->last_transition_time);
        }
      } else {
        row.apply_failure = applied->message.empty() ? applied->reason : applied->message;
      }
    }
  }
  if (r.live) {
    r.live_health = HealthFromFeedback(
        r.group, r.kind, r.name,
        ReportedFeedback{.values = &reported->status_feedback, .synced = IsTrue(feedback_synced)});
  }
  return row;
}

bool Counts(const Row& row) { return !row.resource.hook && !row.resource.skipped; }

nlohmann::json HealthJson(const ResourceHealth& health) {
  nlohmann::json out = {{"status", HealthName(health.status)}};
  if (!health.message.empty()) {
    out["message"] = health.message;
  }
  return out;
}

// Identity members of a resources[] entry (Argo CD's ResourceStatus), or, `all_members`, of a
// syncResult.resources[] entry (ResourceResult). ResourceStatus omits an empty group and
// namespace; ResourceResult has no omitempty on them and the Application CRD requires all five,
// so the hub refuses a status whose cluster-scoped or core result leaves one out.
nlohmann::json ResourceRef(const ManagedResource& r, bool all_members = false) {
  nlohmann::json out = nlohmann::json::object();
  if (all_members || !r.group.empty()) {
    out["group"] = r.group;
  }
  out["version"] = r.version;
  out["kind"] = r.kind;
  if (all_members || !r.namespace_.empty()) {
    out["namespace"] = r.namespace_;
  }
  out["name"] = r.name;
  return out;
}

nlohmann::json ResourceJson(const Row& row) {
  nlohmann::json out = ResourceRef(row.resource);
  if (Counts(row)) {
    out["status"] = row.synced ? kSynced : kOutOfSync;
  }
  if (std::optional<ResourceHealth> health = ShownHealth(row.resource); health.has_value()) {
    out["health"] = HealthJson(*health);
  }
  if (row.resource.hook) {
    out["hook"] = true;
  }
  if (row.sync_wave != 0) {
    out["syncWave"] = row.sync_wave;
  }
  return out;
}

nlohmann::json AppCondition(std::string_view type, std::string message,
                            std::chrono::system_clock::time_point now) {
  return {
      {"type", type}, {"message", std::move(message)}, {"lastTransitionTime", kube::KubeTime(now)}};
}

std::string Describe(const ManagedResource& r) {
  return r.namespace_.empty() ? absl::StrCat(r.kind, "/", r.name)
                              : absl::StrCat(r.kind, "/", r.namespace_, "/", r.name);
}

// "Failed sync attempt to <rev>: one or more objects failed to apply, reason: ..." as Argo CD
// words an automated sync failure, naming at most kMaxNamedFailures resources.
std::string ApplyFailureMessage(const std::vector<const Row*>& failed,
                                const std::string& revision) {
  std::vector<std::string> reasons;
  for (std::size_t i = 0; i < failed.size() && i < kMaxNamedFailures; ++i) {
    reasons.push_back(absl::StrCat(Describe(failed[i]->resource), ": ", failed[i]->apply_failure));
  }
  std::string message =
      absl::StrCat("Failed sync attempt to ", revision,
                   ": one or more objects failed to apply, reason: ", absl::StrJoin(reasons, ", "));
  if (failed.size() > kMaxNamedFailures) {
    absl::StrAppend(&message, " (and ", failed.size() - kMaxNamedFailures, " more)");
  }
  return message;
}

nlohmann::json OperationState(const RenderedBundle& bundle, const std::vector<Row>& rows,
                              const std::vector<const Row*>& failed, bool applied,
                              const nlohmann::json& source) {
  nlohmann::json operation = {{"sync", {{"revision", bundle.revision}}},
                              {"initiatedBy", {{"automated", true}}}};
  nlohmann::json state = {{"operation", std::move(operation)},
                          {"startedAt", kube::KubeTime(bundle.dispatched_at)}};
  if (!failed.empty()) {
    state["phase"] = "Failed";
    state["message"] = absl::StrCat("one or more objects failed to apply, reason: ",
                                    failed.front()->apply_failure);
  } else if (applied) {
    state["phase"] = "Succeeded";
    state["message"] = "successfully synced (all tasks run)";
  } else {
    state["phase"] = "Running";
    state["message"] =
        absl::StrCat("waiting for the work agent to apply generation ", bundle.generation);
    return state;
  }
  // Finished when the last resource was applied (or failed): the latest Applied time seen.
  std::chrono::system_clock::time_point finished = bundle.dispatched_at;
  nlohmann::json results = nlohmann::json::array();
  for (const Row& row : rows) {
    if (!Counts(row)) {
      continue;
    }
    if (row.applied_at.has_value()) {
      finished = std::max(finished, *row.applied_at);
    }
    nlohmann::json result = ResourceRef(row.resource, /*all_members=*/true);
    const bool ok = row.apply_failure.empty() && row.synced;
    result["status"] = ok ? "Synced" : "SyncFailed";
    const std::string& message = ok ? row.applied_message : row.apply_failure;
    if (!message.empty()) {
      result["message"] = message;
    }
    result["syncPhase"] = "Sync";
    results.push_back(std::move(result));
  }
  state["finishedAt"] = kube::KubeTime(finished);
  nlohmann::json sync_result = {{"revision", bundle.revision}, {"resources", std::move(results)}};
  if (!source.is_null()) {
    sync_result["source"] = source;
  }
  state["syncResult"] = std::move(sync_result);
  return state;
}

// One row per rendered manifest (hooks only once they exist), in Argo CD's resource order.
absl::StatusOr<std::vector<Row>> RowsOf(const ManifestStatusInput& input) {
  std::vector<Row> rows;
  if (input.bundle.has_value()) {
    const RenderedBundle& bundle = *input.bundle;
    rows.reserve(bundle.Manifests().size());
    for (std::size_t i = 0; i < bundle.Manifests().size(); ++i) {
      if (absl::Status status = CheckManifest(bundle.Manifests()[i], i); !status.ok()) {
        return status;
      }
      Row row = RowFor(bundle.Manifests()[i], i, bundle, input.report);
      if (row.resource.hook && !row.resource.live) {
        continue;  // Argo CD lists hooks only once they exist
      }
      rows.push_back(std::move(row));
    }
  }
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    const ManagedResource& x = a.resource;
    const ManagedResource& y = b.resource;
    return std::tie(x.group, x.kind, x.namespace_, x.name) <
           std::tie(y.group, y.kind, y.namespace_, y.name);
  });
  return rows;
}

// status.sync: Unknown without a render, Synced once the agent applied this generation whole.
nlohmann::json SyncStatus(const ManifestStatusInput& input, bool applied) {
  std::string_view sync_status = kOutOfSync;
  if (!input.bundle.has_value() || input.render_error.has_value()) {
    sync_status = kUnknown;
  } else if (applied) {
    sync_status = kSynced;
  }
  nlohmann::json sync = {{"status", sync_status}};
  nlohmann::json compared_to = nlohmann::json::object();
  if (!input.source.is_null()) {
    compared_to["source"] = input.source;
  }
  if (!input.destination.is_null()) {
    compared_to["destination"] = input.destination;
  }
  sync["comparedTo"] = std::move(compared_to);
  if (input.bundle.has_value()) {
    sync["revision"] = input.bundle->revision;
  }
  return sync;
}

// status.conditions: the render error as a ComparisonError, apply failures as a SyncError.
nlohmann::json Conditions(const ManifestStatusInput& input, const std::vector<const Row*>& failed) {
  nlohmann::json conditions = nlohmann::json::array();
  if (input.render_error.has_value()) {
    conditions.push_back(AppCondition(
        "ComparisonError", absl::StrCat("Failed to load target state: ", *input.render_error),
        input.now));
  }
  if (!failed.empty()) {
    conditions.push_back(
        AppCondition("SyncError", ApplyFailureMessage(failed, input.bundle->revision), input.now));
  }
  return conditions;
}

}  // namespace

absl::StatusOr<nlohmann::json> ApplicationStatusOf(const ManifestStatusInput& input) {
  if (input.report.has_value() && input.report->status == nullptr) {
    return absl::InvalidArgumentError("report.status is null");
  }
  ASSIGN_OR_RETURN(const std::vector<Row> rows, RowsOf(input));

  std::vector<ManagedResource> resources;
  std::vector<const Row*> failed;
  bool all_synced = true;
  nlohmann::json resources_json = nlohmann::json::array();
  for (const Row& row : rows) {
    resources.push_back(row.resource);
    resources_json.push_back(ResourceJson(row));
    if (!Counts(row)) {
      continue;
    }
    all_synced = all_synced && row.synced;
    if (!row.apply_failure.empty()) {
      failed.push_back(&row);
    }
  }

  const bool reported_generation = input.bundle.has_value() && input.report.has_value() &&
                                   input.report->generation == input.bundle->generation;
  const bool applied = reported_generation && all_synced;
  nlohmann::json status = {
      {"sync", SyncStatus(input, applied)},
      {"health", {{"status", HealthName(AggregateHealth(resources))}}},
      {"resources", std::move(resources_json)},
      {"reconciledAt", kube::KubeTime(input.now)},
  };
  if (!input.source_type.empty()) {
    status["sourceType"] = input.source_type;
  }

  if (nlohmann::json conditions = Conditions(input, failed); !conditions.empty()) {
    status["conditions"] = std::move(conditions);
  }

  if (input.bundle.has_value()) {
    status["operationState"] = OperationState(*input.bundle, rows, failed, applied, input.source);
    nlohmann::json summary = nlohmann::json::object();
    if (std::vector<std::string> images = ImagesOf(input.bundle->Manifests()); !images.empty()) {
      summary["images"] = std::move(images);
    }
    status["summary"] = std::move(summary);
  }
  return status;
}

}  // namespace mmi::status_sink
