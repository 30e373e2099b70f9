#include "libs/service/kube_event.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "libs/kube_object/object.h"

namespace mmi::service {

using nlohmann::json;

json MakeKubeEvent(const json& object, const KubeEventSpec& spec,
                   std::chrono::system_clock::time_point now, const std::string& name_suffix) {
  const json& meta = object.value("metadata", json::object());
  const std::string ns = meta.value("namespace", "");
  const std::string name = meta.value("name", "");
  const std::string ts = kube::KubeTime(now);
  json involved = {{"apiVersion", object.value("apiVersion", "argoproj.io/v1alpha1")},
                   {"kind", object.value("kind", "Application")},
                   {"namespace", ns},
                   {"name", name}};
  if (meta.contains("uid")) {
    involved["uid"] = meta["uid"];
  }
  if (meta.contains("resourceVersion")) {
    involved["resourceVersion"] = meta["resourceVersion"];
  }
  json event = {{"apiVersion", "v1"},
                {"kind", "Event"},
                {"metadata", {{"name", absl::StrCat(name, ".", name_suffix)}, {"namespace", ns}}},
                {"involvedObject", std::move(involved)},
                {"type", spec.type},
                {"reason", spec.reason},
                {"message", spec.message},
                {"source", {{"component", spec.component}}},
                {"firstTimestamp", ts},
                {"lastTimestamp", ts},
                {"count", 1}};
  if (!spec.instance.empty()) {
    event["reportingComponent"] = spec.component;
    event["reportingInstance"] = spec.instance;
  }
  return event;
}

}  // namespace mmi::service
