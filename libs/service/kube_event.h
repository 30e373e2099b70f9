// core/v1 Events that the services write about a hub object (an Application, an
// ApplicationSet): what happened to it, for `kubectl describe`. Pure builder: no I/O,
// thread-safe; the caller creates the Event with its own KubeClient.
#pragma once

#include <chrono>
#include <string>

#include "nlohmann/json.hpp"

namespace mmi::service {

struct KubeEventSpec {
  std::string type = "Warning";  // Normal | Warning
  std::string reason;            // CamelCase, e.g. UnknownManagedCluster
  std::string message;
  std::string component = "mmi-dispatcher";
  std::string instance;  // reportingInstance (pod name)
};

// A core/v1 Event about `object` (uses its apiVersion, kind, namespace, name, uid,
// resourceVersion; an object without apiVersion/kind is taken for an Argo CD Application).
// `name_suffix` makes the Event name unique (`<object>.<suffix>`).
nlohmann::json MakeKubeEvent(const nlohmann::json& object, const KubeEventSpec& spec,
                             std::chrono::system_clock::time_point now,
                             const std::string& name_suffix);

}  // namespace mmi::service
