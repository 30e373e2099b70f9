#include "libs/metrics/build_info.h"

#include <dlfcn.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <cstddef>

namespace mmi::metrics {

const char* Version() { return MMI_VERSION; }

std::string Allocator() {
  // jemalloc's control interface, looked up at run time: no link dependency on jemalloc here.
  using Mallctl = int (*)(const char*, void*, size_t*, void*, size_t);
  void* symbol = dlsym(RTLD_DEFAULT, "mallctl");
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): dlsym gives an object pointer
  auto* mallctl = reinterpret_cast<Mallctl>(symbol);
  if (mallctl == nullptr) {
    return "system";
  }
  const char* version = nullptr;
  size_t size = sizeof(version);
  if (mallctl("version", &version, &size, nullptr, 0) != 0 || version == nullptr) {
    return "jemalloc";
  }
  return std::string("jemalloc ") + version;
}

void RegisterBuildInfo(prometheus::Registry& registry, const std::string& service) {
  prometheus::BuildGauge()
      .Name("mmi_build_info")
      .Help("Always 1; labels say which build of which service is running")
      .Register(registry)
      .Add({{"service", service}, {"version", Version()}, {"allocator", Allocator()}})
      .Set(1);
}

}  // namespace mmi::metrics
