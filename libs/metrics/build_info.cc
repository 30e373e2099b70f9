#include "libs/metrics/build_info.h"

#include <prometheus/gauge.h>
#include <prometheus/registry.h>

namespace mmi::metrics {

const char* Version() { return MMI_VERSION; }

void RegisterBuildInfo(prometheus::Registry& registry, const std::string& service) {
  prometheus::BuildGauge()
      .Name("mmi_build_info")
      .Help("Always 1; labels say which build of which service is running")
      .Register(registry)
      .Add({{"service", service}, {"version", Version()}})
      .Set(1);
}

}  // namespace mmi::metrics
