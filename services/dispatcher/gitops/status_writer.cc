#include "services/dispatcher/gitops/status_writer.h"

#include "libs/kube_object/object.h"
#include "services/dispatcher/gitops/internal/controller_log.h"
#include "services/dispatcher/gitops/internal/hub_resources.h"

namespace mmi::dispatcher {
namespace {

using nlohmann::json;

}  // namespace

json StatusWriter::Current(const std::string& key, const json& object) const {
  if (auto w = written_.find(key);
      w != written_.end() && w->second.based_on == kube::ResourceVersionOf(object)) {
    return w->second.status;
  }
  return object.contains("status") && object["status"].is_object() ? object["status"]
                                                                   : json::object();
}

bool StatusWriter::WriteIfChanged(const std::string& ns, const std::string& name,
                                  const std::string& resource_version, json status,
                                  const json& original, std::chrono::system_clock::time_point now) {
  if (status == original) {
    return true;
  }
  status["lastUpdateTime"] = kube::KubeTime(now);
  kube::PatchOptions options;
  options.field_manager = field_manager_;
  auto patched = client_.Patch(internal::GitOpsClusters(ns), name, kube::PatchType::kMerge,
                               json{{"status", status}}, options, "status");
  const std::string key = kube::ObjectKey(ns, name);
  if (patched.ok()) {
    written_[key] = Written{.based_on = resource_version, .status = std::move(status)};
    return true;
  }
  if (absl::IsNotFound(patched.status())) {
    return true;
  }
  internal::GitOpsClusterLog().Warn("cannot write GitOpsCluster status",
                                    {{"resource", key}, {"error", patched.status().ToString()}});
  return false;
}

}  // namespace mmi::dispatcher
