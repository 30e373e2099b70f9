#include "libs/kube/internal/client_metrics.h"

#include <exception>

#include "libs/common/log.h"
#include "libs/kube/internal/loggers.h"

namespace mmi::kube::internal {
namespace {

const log::Logger& Log() { return ClientLog(); }

}  // namespace

ClientMetrics::ClientMetrics(prometheus::Registry* registry) {
  if (registry == nullptr) {
    return;
  }
  try {
    requests_ = &prometheus::BuildCounter()
                     .Name("rest_client_requests_total")
                     .Help(
                         "Number of HTTP requests to the Kubernetes API, by status code and "
                         "method.")
                     .Register(*registry);
    duration_ = &prometheus::BuildHistogram()
                     .Name("rest_client_request_duration_seconds")
                     .Help("Kubernetes API request latency in seconds, by verb.")
                     .Register(*registry);
  } catch (const std::exception& e) {
    // A family of the same name but another type or help exists: a wiring bug, not fatal.
    Log().Error("cannot register rest_client metrics", {{"error", e.what()}});
    requests_ = nullptr;
    duration_ = nullptr;
  }
}

void ClientMetrics::CountRequest(const std::string& method, long code) {
  if (requests_ == nullptr) {
    return;
  }
  requests_->Add({{"code", code > 0 ? std::to_string(code) : "<error>"}, {"method", method}})
      .Increment();
}

void ClientMetrics::ObserveDuration(const std::string& verb, std::chrono::nanoseconds duration) {
  if (duration_ == nullptr) {
    return;
  }
  static const prometheus::Histogram::BucketBoundaries buckets = {
      0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0};
  duration_->Add({{"verb", verb}}, buckets)
      .Observe(std::chrono::duration<double>(duration).count());
}

}  // namespace mmi::kube::internal
