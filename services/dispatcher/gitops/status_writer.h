// StatusWriter: writes a GitOpsCluster's status subresource (JSON merge patch, with its
// lastUpdateTime) only when it changed, and remembers what it wrote: until the informer's cache
// shows the object that write produced, the written status, not the cached one, is what the API
// server holds (otherwise every quick re-reconcile would write again).
//
// Thread safety: gitops-loop only. `client` is borrowed and outlives it.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <utility>

#include "libs/kube/kube_client.h"
#include "nlohmann/json.hpp"

namespace mmi::dispatcher {

class StatusWriter {
 public:
  StatusWriter(kube::KubeClient& client, std::string field_manager)
      : client_(client), field_manager_(std::move(field_manager)) {}

  // The status the API server holds for the cached GitOpsCluster `object` (key "ns/name").
  nlohmann::json Current(const std::string& key, const nlohmann::json& object) const;
  // Writes `status` when it differs from `original` (Current()). False when the write failed
  // (to retry); a GitOpsCluster deleted meanwhile is no failure.
  bool WriteIfChanged(const std::string& ns, const std::string& name,
                      const std::string& resource_version, nlohmann::json status,
                      const nlohmann::json& original, std::chrono::system_clock::time_point now);
  // The GitOpsCluster `key` is gone.
  void Forget(const std::string& key) { written_.erase(key); }

 private:
  // The last status written for a GitOpsCluster.
  struct Written {
    std::string based_on;  // resourceVersion of the object it was computed from
    nlohmann::json status;
  };

  kube::KubeClient& client_;
  const std::string field_manager_;
  std::map<std::string, Written> written_;  // by GitOpsCluster key
};

}  // namespace mmi::dispatcher
