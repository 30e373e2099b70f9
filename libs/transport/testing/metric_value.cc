#include "libs/transport/testing/metric_value.h"

#include <algorithm>

namespace mmi::transport::testing {

double MetricValue(const prometheus::Registry& registry, std::string_view name,
                   const std::map<std::string, std::string>& labels) {
  for (const prometheus::MetricFamily& family : registry.Collect()) {
    if (family.name != name) {
      continue;
    }
    for (const prometheus::ClientMetric& metric : family.metric) {
      const bool match = std::all_of(labels.begin(), labels.end(), [&](const auto& wanted) {
        return std::any_of(metric.label.begin(), metric.label.end(), [&](const auto& label) {
          return label.name == wanted.first && label.value == wanted.second;
        });
      });
      if (!match) {
        continue;
      }
      switch (family.type) {
        case prometheus::MetricType::Counter:
          return metric.counter.value;
        case prometheus::MetricType::Gauge:
          return metric.gauge.value;
        case prometheus::MetricType::Histogram:
          return static_cast<double>(metric.histogram.sample_count);
        default:
          return 0;
      }
    }
  }
  return 0;
}

}  // namespace mmi::transport::testing
