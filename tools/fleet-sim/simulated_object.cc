#include "tools/fleet-sim/simulated_object.h"

#include <cstdint>
#include <string>
#include <utility>

#include "libs/kube_object/object.h"
#include "tools/fleet-sim/work_status.h"

namespace mmi::fleet_sim {
namespace {

using kube::StringAt;
using nlohmann::json;

// `.spec.replicas`, 1 when absent (the API server's default for the workload kinds).
std::int64_t DesiredReplicas(const json& manifest) {
  const json* spec = Child(manifest, "spec");
  const json* replicas = spec != nullptr ? Child(*spec, "replicas") : nullptr;
  return replicas != nullptr && replicas->is_number_integer() ? replicas->get<std::int64_t>() : 1;
}

json TrueCondition(std::string type, std::string reason) {
  return {{"type", std::move(type)}, {"status", "True"}, {"reason", std::move(reason)}};
}

// The settled status of `kind` in `group` ("" for core) at `generation`; null for kinds that
// have none or whose status no health rule reads.
json SettledStatus(const json& manifest, const std::string& group, const std::string& kind,
                   std::int64_t generation) {
  const std::int64_t replicas = DesiredReplicas(manifest);
  if (group == "apps" && kind == "Deployment") {
    return {{"observedGeneration", generation},
            {"replicas", replicas},
            {"updatedReplicas", replicas},
            {"readyReplicas", replicas},
            {"availableReplicas", replicas},
            {"conditions", json::array({TrueCondition("Available", "MinimumReplicasAvailable"),
                                        TrueCondition("Progressing", "NewReplicaSetAvailable")})}};
  }
  if (group == "apps" && kind == "StatefulSet") {
    // One revision, current and updated alike: a finished roll-out.
    const std::string revision = StringAt(MetadataOf(manifest), "name") + "-settled";
    return {{"observedGeneration", generation}, {"replicas", replicas},
            {"readyReplicas", replicas},        {"currentReplicas", replicas},
            {"updatedReplicas", replicas},      {"currentRevision", revision},
            {"updateRevision", revision}};
  }
  if (group == "apps" && kind == "DaemonSet") {
    // One node: the simulated cluster schedules one pod.
    return {{"observedGeneration", generation},
            {"desiredNumberScheduled", 1},
            {"currentNumberScheduled", 1},
            {"updatedNumberScheduled", 1},
            {"numberReady", 1},
            {"numberAvailable", 1}};
  }
  if (group == "apps" && kind == "ReplicaSet") {
    return {{"observedGeneration", generation},
            {"replicas", replicas},
            {"readyReplicas", replicas},
            {"availableReplicas", replicas}};
  }
  if (group == "batch" && kind == "Job") {
    return {{"succeeded", 1}, {"conditions", json::array({TrueCondition("Complete", "")})}};
  }
  if (group.empty() && kind == "Pod") {
    return {{"phase", "Running"}, {"conditions", json::array({TrueCondition("Ready", "")})}};
  }
  if (group.empty() && kind == "Namespace") {
    return {{"phase", "Active"}};
  }
  if (group.empty() && kind == "PersistentVolumeClaim") {
    return {{"phase", "Bound"}};
  }
  if (group.empty() && kind == "Service") {
    const json* spec = Child(manifest, "spec");
    if (spec != nullptr && StringAt(*spec, "type") == "LoadBalancer") {
      return {{"loadBalancer", {{"ingress", json::array({{{"ip", "127.0.0.1"}}})}}}};
    }
    return {{"loadBalancer", json::object()}};
  }
  return nullptr;
}

}  // namespace

json SettledObject(const json& manifest) {
  json live = manifest;
  if (!live.is_object()) {
    return live;
  }
  const std::string api_version = StringAt(live, "apiVersion");
  const auto slash = api_version.find('/');
  const std::string group = slash == std::string::npos ? "" : api_version.substr(0, slash);
  json& meta = live["metadata"];
  if (!meta.is_object()) {
    meta = json::object();
  }
  if (!meta.contains("generation") || !meta["generation"].is_number_integer()) {
    meta["generation"] = 1;
  }
  json status = SettledStatus(manifest, group, StringAt(live, "kind"),
                              meta["generation"].get<std::int64_t>());
  if (!status.is_null()) {
    live["status"] = std::move(status);
  }
  return live;
}

}  // namespace mmi::fleet_sim
