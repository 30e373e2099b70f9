// `mmi_build_info{service,version,allocator}` = 1: which build is running, for dashboards and
// alerts.
#pragma once

#include <string>

namespace prometheus {
class Registry;
}  // namespace prometheus

namespace mmi::metrics {

// The project version baked in at build time (CMake project version).
const char* Version();

// The malloc serving this process: "jemalloc <version>" when jemalloc is linked in
// (MMI_ALLOCATOR, the services' default) or preloaded, else "system".
std::string Allocator();

// Registers mmi_build_info on `registry`.
void RegisterBuildInfo(prometheus::Registry& registry, const std::string& service);

}  // namespace mmi::metrics
