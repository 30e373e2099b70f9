// Request metrics named like client-go's / controller-runtime's, so existing dashboards work:
//   rest_client_requests_total{code,method}             counter ("<error>" when no response)
//   rest_client_request_duration_seconds{verb}          histogram, non-streaming requests
#pragma once

#include <chrono>
#include <string>

#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace mmi::kube::internal {

// Thread-safe. With a null registry every call is a no-op.
class ClientMetrics {
 public:
  explicit ClientMetrics(prometheus::Registry* registry);
  // `code` is the HTTP status, or 0 when the request got no response.
  void CountRequest(const std::string& method, long code);
  void ObserveDuration(const std::string& verb, std::chrono::nanoseconds duration);

 private:
  prometheus::Family<prometheus::Counter>* requests_ = nullptr;
  prometheus::Family<prometheus::Histogram>* duration_ = nullptr;
};

}  // namespace mmi::kube::internal
