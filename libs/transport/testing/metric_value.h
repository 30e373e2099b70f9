// Reads one sample from a prometheus::Registry, for assertions on transport metrics.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "prometheus/registry.h"

namespace mmi::transport::testing {

// The value of the counter or gauge `name` whose labels include all of `labels` (for a
// histogram: its sample count). 0 when no such series exists.
double MetricValue(const prometheus::Registry& registry, std::string_view name,
                   const std::map<std::string, std::string>& labels);

}  // namespace mmi::transport::testing
