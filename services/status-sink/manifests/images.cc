#include "services/status-sink/manifests/images.h"

#include <algorithm>

#include "libs/kube_object/object.h"

namespace mmi::status_sink {
namespace {

void AddImages(const nlohmann::json& pod_spec, std::vector<std::string>& images) {
  for (const char* list : {"initContainers", "containers"}) {
    const nlohmann::json& containers = kube::FieldAt(pod_spec, list);
    if (!containers.is_array()) {
      continue;
    }
    for (const nlohmann::json& container : containers) {
      if (std::string image = kube::StringAt(container, "image"); !image.empty()) {
        images.push_back(std::move(image));
      }
    }
  }
}

}  // namespace

std::vector<std::string> ImagesOf(const std::vector<nlohmann::json>& manifests) {
  std::vector<std::string> images;
  for (const nlohmann::json& manifest : manifests) {
    const nlohmann::json& spec = kube::ObjectAt(manifest, "spec");
    if (kube::StringAt(manifest, "kind") == "Pod") {
      AddImages(spec, images);
      continue;
    }
    AddImages(kube::ObjectAt(kube::ObjectAt(spec, "template"), "spec"), images);
    const nlohmann::json& job_spec = kube::ObjectAt(kube::ObjectAt(spec, "jobTemplate"), "spec");
    AddImages(kube::ObjectAt(kube::ObjectAt(job_spec, "template"), "spec"), images);
  }
  std::sort(images.begin(), images.end());
  images.erase(std::unique(images.begin(), images.end()), images.end());
  return images;
}

}  // namespace mmi::status_sink
