#include "services/status-sink/manifests/images.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace mmi::status_sink {
namespace {

nlohmann::json PodSpec(std::vector<std::string> images, std::vector<std::string> init = {}) {
  nlohmann::json spec = {{"containers", nlohmann::json::array()}};
  for (const std::string& image : images) {
    spec["containers"].push_back({{"name", "c"}, {"image", image}});
  }
  for (const std::string& image : init) {
    spec["initContainers"].push_back({{"name", "i"}, {"image", image}});
  }
  return spec;
}

TEST(ImagesOfTest, CollectsPodSpecsOfEveryWorkloadShapeSortedAndUnique) {
  const std::vector<nlohmann::json> manifests = {
      {{"kind", "Deployment"},
       {"spec", {{"template", {{"spec", PodSpec({"nginx:1.27", "sidecar:2"}, {"init:1"})}}}}}},
      {{"kind", "Pod"}, {"spec", PodSpec({"busybox:1.36"})}},
      {{"kind", "CronJob"},
       {"spec", {{"jobTemplate", {{"spec", {{"template", {{"spec", PodSpec({"backup:3"})}}}}}}}}}},
      {{"kind", "StatefulSet"}, {"spec", {{"template", {{"spec", PodSpec({"nginx:1.27"})}}}}}},
      {{"kind", "ConfigMap"}, {"data", {{"image", "not-an-image"}}}},
  };
  EXPECT_EQ(ImagesOf(manifests), (std::vector<std::string>{"backup:3", "busybox:1.36", "init:1",
                                                           "nginx:1.27", "sidecar:2"}));
}

TEST(ImagesOfTest, SkipsWhatIsNotAPodSpec) {
  const std::vector<nlohmann::json> manifests = {
      nlohmann::json::array(),
      "text",
      {{"kind", "Deployment"}, {"spec", {{"template", {{"spec", {{"containers", "x"}}}}}}}},
      {{"kind", "Pod"}, {"spec", {{"containers", {{{"image", 7}}, {{"name", "no-image"}}}}}}},
  };
  EXPECT_TRUE(ImagesOf(manifests).empty());
  EXPECT_TRUE(ImagesOf({}).empty());
}

}  // namespace
}  // namespace mmi::status_sink
