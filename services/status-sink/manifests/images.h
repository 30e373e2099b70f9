// `status.summary.images` of a manifest-delivered Application: the container images of the
// rendered manifests. Argo CD lists the images of the live Pods in the app's resource tree; the
// sink sees no Pods, so it reads the pod specs the manifests carry: a Pod's `spec`, a workload's
// `spec.template.spec` (Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, ...) and a CronJob's
// `spec.jobTemplate.spec.template.spec`, containers and init containers.
// Pure function, thread-safe.
#pragma once

#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace mmi::status_sink {

// The images, sorted and without duplicates. Anything that is not where a pod spec would be, or
// not a string, is skipped.
std::vector<std::string> ImagesOf(const std::vector<nlohmann::json>& manifests);

}  // namespace mmi::status_sink
