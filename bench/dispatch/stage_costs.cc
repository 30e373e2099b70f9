#include "bench/dispatch/stage_costs.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <utility>

#include "bench/common/cpu_time.h"
#include "libs/cloudevents/json_format.h"
#include "libs/cloudevents/resource_id.h"
#include "prometheus/registry.h"
#include "services/dispatcher/apps/decision.h"
#include "services/dispatcher/apps/metrics.h"
#include "services/dispatcher/apps/spec_events.h"

namespace mmi::bench {
namespace {

// The fastest of `rounds` runs of `body` (which handles `apps` Applications), per Application.
double MicrosPerApp(std::size_t apps, int rounds, const std::function<void()>& body) {
  int64_t best = std::numeric_limits<int64_t>::max();
  for (int round = 0; round < rounds; ++round) {
    const int64_t start = ThreadCpuNs();
    body();
    best = std::min(best, ThreadCpuNs() - start);
  }
  return static_cast<double>(best) / 1e3 / static_cast<double>(apps);
}

// Keeps the optimiser from dropping a result.
template <typename T>
void Keep(T&& value) {
  asm volatile("" : : "g"(&value) : "memory");
}

}  // namespace

StageCosts MeasureStages(const FleetShape& shape, std::size_t apps, int rounds) {
  const SyncedLister lister(FleetShape{.applications = apps, .clusters = shape.clusters});
  dispatcher::ManagedClusterTracker clusters;
  AddClusters(shape, clusters);
  prometheus::Registry registry;
  dispatcher::DispatcherMetrics metrics(registry, "bench");
  dispatcher::DispatchState state(metrics.tracked());
  const dispatcher::ReconcilerSettings settings;
  const std::vector<kube::ObjectPtr> objects = lister.List();
  std::vector<dispatcher::Dispatch> dispatches;
  std::vector<std::string> encoded;
  for (const auto& app : objects) {
    dispatches.push_back(*dispatcher::BuildDispatch(*app, settings.payload));
    auto event = dispatcher::MakeSpecEvent(dispatches.back(), settings.payload.source_id, true, 1,
                                           1, cloudevents::NewUuidV4(), {});
    encoded.push_back(*cloudevents::EncodeStructuredJson(*event));
  }
  StageCosts out;
  out.event_bytes = encoded.empty() ? 0 : encoded.front().size();
  const double decide = MicrosPerApp(apps, rounds, [&] {
    for (const auto& app : objects) {
      const dispatcher::Observation seen{.key = kube::ObjectKey(*app),
                                         .app = app.get(),
                                         .tracked = nullptr,
                                         .state = &state,
                                         .clusters = &clusters,
                                         .now = {}};
      Keep(dispatcher::Decide(seen, settings));
    }
  });
  const double build = MicrosPerApp(apps, rounds, [&] {
    for (const auto& app : objects) {
      Keep(dispatcher::BuildDispatch(*app, settings.payload));
    }
  });
  const double event = MicrosPerApp(apps, rounds, [&] {
    for (const auto& d : dispatches) {
      auto made = dispatcher::MakeSpecEvent(d, settings.payload.source_id, true, 1, 1,
                                            cloudevents::NewUuidV4(), {});
      Keep(cloudevents::EncodeStructuredJson(*made));
    }
  });
  const double decode = MicrosPerApp(apps, rounds, [&] {
    for (const auto& text : encoded) {
      Keep(cloudevents::DecodeStructuredJson(text));
    }
  });
  out.stages = {
      {"decide (Decide() less BuildDispatch)", decide - build},
      {"build payload: BuildDispatch", build},
      {"build payload: spec event made + encoded for the outbox", event},
      // Since 2026-11-27 only for events read back from the store (restart, retry).
      {"publish: outbox decodes a stored event (after a restart or a retry only)", decode}};
  return out;
}

}  // namespace mmi::bench
