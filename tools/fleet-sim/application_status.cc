#include "tools/fleet-sim/application_status.h"

#include <chrono>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "libs/cloudevents/status_hash.h"
#include "libs/kube_object/object.h"

namespace mmi::fleet_sim {
namespace {

using nlohmann::json;

// The member `key` of `value` when `value` is an object holding it, else nullptr. Never throws.
const json* Child(const json& value, std::string_view key) {
  if (!value.is_object()) {
    return nullptr;
  }
  auto it = value.find(key);
  return it == value.end() ? nullptr : &*it;
}

// The Application's (first) source: `spec.source`, else `spec.sources[0]`, else {}.
json SourceOf(const json& spec) {
  if (const json* source = Child(spec, "source"); source != nullptr && source->is_object()) {
    return *source;
  }
  if (const json* sources = Child(spec, "sources"); sources != nullptr && sources->is_array() &&
                                                    !sources->empty() &&
                                                    sources->front().is_object()) {
    return sources->front();
  }
  return json::object();
}

json ResourceEntry(std::string_view group, std::string_view kind, const std::string& name,
                   const std::string& ns, const ApplicationRuntime& runtime, bool primary) {
  json entry = json::object();
  if (!group.empty()) {
    entry["group"] = group;
  }
  entry["kind"] = kind;
  entry["name"] = name;
  entry["namespace"] = ns;
  entry["version"] = "v1";
  // The primary workload carries the Application's drift and health; the Service stays fine,
  // unless nothing is deployed yet (Missing): then every resource is missing.
  const bool carries = primary || runtime.health_status == kHealthMissing;
  entry["status"] = carries ? runtime.sync_status : std::string(kSyncSynced);
  json health = {{"status", carries ? runtime.health_status : std::string(kHealthHealthy)}};
  if (primary && runtime.health_status == kHealthProgressing) {
    health["message"] =
        absl::StrCat("Waiting for rollout to finish: 1 of 2 updated replicas are available...");
  } else if (primary && runtime.health_status == kHealthDegraded) {
    health["message"] = absl::StrCat("Deployment \"", name, "\" exceeded its progress deadline");
  }
  entry["health"] = std::move(health);
  return entry;
}

constexpr std::string_view kSucceededMessage = "successfully synced (all tasks run)";
constexpr std::string_view kRunningMessage = "one or more tasks are running";

// `operationState.syncResult.resources`: one applied result per resource of `resources`.
json SyncResultResources(const json& resources, const std::string& app_name) {
  json results = json::array();
  for (const json& resource : resources) {
    json result = {{"kind", resource["kind"]},
                   {"name", resource["name"]},
                   {"namespace", resource["namespace"]},
                   {"version", resource["version"]},
                   {"status", "Synced"},
                   {"hookPhase", "Running"},
                   {"syncPhase", "Sync"},
                   {"message", absl::StrCat(resource["kind"].get<std::string>() == "Service"
                                                ? "service/"
                                                : "deployment.apps/",
                                            app_name, " configured")}};
    result["group"] = resource.contains("group") ? resource["group"] : json("");
    results.push_back(std::move(result));
  }
  return results;
}

const json& SharedOrEmpty(const std::shared_ptr<const json>& value) {
  static const json kEmpty = json::object();
  return value != nullptr ? *value : kEmpty;
}

// `operationState` as the Argo CD sync model left it: Running (no result yet) or Succeeded.
json TrackedOperationState(cloudevents::Timestamp started, const ArgoCdSyncState& state,
                           const json& resources, const std::string& app_name) {
  json op_state = {{"operation", json::parse(state.operation, nullptr, /*allow_exceptions=*/false)},
                   {"phase", "Running"},
                   {"message", kRunningMessage},
                   {"startedAt", kube::KubeTime(started)}};
  if (!state.operation_running) {
    op_state["phase"] = "Succeeded";
    op_state["message"] = kSucceededMessage;
    op_state["finishedAt"] = kube::KubeTime(state.operation_finished_at);
    op_state["syncResult"] = {{"revision", state.operation_revision},
                              {"source", SharedOrEmpty(state.operation_source)},
                              {"resources", SyncResultResources(resources, app_name)}};
  }
  return op_state;
}

json HistoryOf(const ArgoCdSyncState& state) {
  json history = json::array();
  for (const SyncHistoryEntry& entry : state.history) {
    json initiated_by = json::object();
    if (!entry.initiated_by.username.empty()) {
      initiated_by["username"] = entry.initiated_by.username;
    }
    if (entry.initiated_by.automated) {
      initiated_by["automated"] = true;
    }
    history.push_back({{"id", entry.id},
                       {"revision", entry.revision},
                       {"source", SharedOrEmpty(entry.source)},
                       {"initiatedBy", std::move(initiated_by)},
                       {"deployStartedAt", kube::KubeTime(entry.deploy_started_at)},
                       {"deployedAt", kube::KubeTime(entry.deployed_at)}});
  }
  return history;
}

}  // namespace

std::string SimulatedRevision(const json& manifest) {
  const json* spec = Child(manifest, "spec");
  const json source = SourceOf(spec != nullptr ? *spec : json::object());
  const std::string seed =
      absl::StrCat(kube::StringAt(source, "repoURL"), "@",
                   kube::FindString(source, "targetRevision").value_or("HEAD"), ":",
                   kube::StringAt(source, "path"), kube::StringAt(source, "chart"));
  return cloudevents::Sha256Hex(seed).substr(0, 40);
}

json ApplicationSource(const json& manifest) {
  const json* spec = Child(manifest, "spec");
  return SourceOf(spec != nullptr ? *spec : json::object());
}

json ApplicationStatus(const json& manifest, const ApplicationRuntime& runtime) {
  static const json kEmpty = json::object();
  const json* meta_ptr = Child(manifest, "metadata");
  const json* spec_ptr = Child(manifest, "spec");
  const json& meta = meta_ptr != nullptr ? *meta_ptr : kEmpty;
  const json& spec = spec_ptr != nullptr ? *spec_ptr : kEmpty;
  const std::string app_name = kube::FindString(meta, "name").value_or("app");
  const std::string app_namespace =
      kube::FindString(meta, "namespace").value_or("openshift-gitops");
  const json* destination_ptr = Child(spec, "destination");
  const json& destination = destination_ptr != nullptr ? *destination_ptr : kEmpty;
  const std::string dest_namespace =
      kube::FindString(destination, "namespace").value_or(app_namespace);
  const std::string dest_server =
      kube::FindString(destination, "server").value_or("https://kubernetes.default.svc");
  const json source = SourceOf(spec);
  const std::string revision = SimulatedRevision(manifest);
  const ArgoCdSyncState* tracked = runtime.argocd.get();
  // The live workload runs the revision last synced; under the instant model, the spec's.
  const std::string& deployed = tracked != nullptr ? tracked->deployed_revision : revision;

  json status = json::object();
  status["controllerNamespace"] = app_namespace;
  json health = {{"status", runtime.health_status}};
  status["health"] = std::move(health);
  status["reconciledAt"] = kube::KubeTime(runtime.reconciled_at);
  status["resources"] = json::array({
      ResourceEntry("apps", "Deployment", app_name, dest_namespace, runtime, /*primary=*/true),
      ResourceEntry("", "Service", app_name, dest_namespace, runtime, /*primary=*/false),
  });
  status["sourceType"] = Child(source, "chart") != nullptr ? "Helm" : "Directory";
  json summary = json::object();
  if (!deployed.empty()) {
    summary["images"] =
        json::array({absl::StrCat("quay.io/fleet-sim/", app_name, ":", deployed.substr(0, 7))});
  }
  status["summary"] = std::move(summary);
  json compared_to = {{"destination", {{"namespace", dest_namespace}, {"server", dest_server}}},
                      {"source", source}};
  status["sync"] = {{"comparedTo", std::move(compared_to)},
                    {"revision", revision},
                    {"status", runtime.sync_status}};

  if (tracked != nullptr) {
    if (!tracked->operation.empty()) {
      status["operationState"] = TrackedOperationState(runtime.operation_started_at, *tracked,
                                                       status["resources"], app_name);
    }
  } else if (runtime.last_operation.has_value()) {
    const std::string started = kube::KubeTime(runtime.operation_started_at);
    status["operationState"] = {
        {"operation", *runtime.last_operation},
        {"phase", "Succeeded"},
        {"message", kSucceededMessage},
        {"startedAt", started},
        {"finishedAt", started},
        {"syncResult",
         {{"revision", revision},
          {"source", source},
          {"resources", SyncResultResources(status["resources"], app_name)}}}};
    status["history"] = json::array({{{"id", 0},
                                      {"revision", revision},
                                      {"source", source},
                                      {"deployStartedAt", started},
                                      {"deployedAt", started}}});
  }
  if (tracked != nullptr && !tracked->history.empty()) {
    status["history"] = HistoryOf(*tracked);
  }
  return status;
}

}  // namespace mmi::fleet_sim
