// AppSetResourceWriter: what the ApplicationSet controller needs in an Argo CD namespace to read
// Placement decisions (hub-apis.md §4.4 steps 6-7): the `acm-placement` / `acm-placementrule`
// duck-type ConfigMaps and the placement Role and RoleBinding (bound to the ApplicationSet
// controller's ServiceAccount). Create-only: an existing object is left as it is.
//
// Thread safety: gitops-loop only. `client` is borrowed and outlives it.
#pragma once

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "libs/kube/kube_client.h"
#include "nlohmann/json.hpp"

namespace mmi::dispatcher {

class AppSetResourceWriter {
 public:
  AppSetResourceWriter(kube::KubeClient& client, std::string field_manager)
      : client_(client), field_manager_(std::move(field_manager)) {}

  // Creates whatever of them is missing in `argo_namespace`.
  absl::Status Ensure(const std::string& argo_namespace);

 private:
  absl::Status CreateIfAbsent(const kube::ResourceRef& ref, const nlohmann::json& object);

  kube::KubeClient& client_;
  const std::string field_manager_;
};

}  // namespace mmi::dispatcher
