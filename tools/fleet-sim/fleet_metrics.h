// The fleet simulator's own metrics (STYLE.md §8), declared in one struct built from an injected
// registry. Label values come from closed sets only (never cluster names or resource IDs).
//
//   mmi_fleet_sim_specs_received_total{action}      action: create_request, update_request,
//                                                   delete_request, resync_response
//   mmi_fleet_sim_statuses_sent_total{reason}       reason: apply, delete, refresh, transition,
//                                                   resync, sync (--sync-model argocd steps)
//   mmi_fleet_sim_status_resyncs_answered_total     status resync requests answered
//   mmi_fleet_sim_spec_resyncs_sent_total           spec resync requests sent on (re)connect
//   mmi_fleet_sim_events_rejected_total{reason}     reason: malformed, unknown_cluster, stale,
//                                                   other_cluster, unsupported
//   mmi_fleet_sim_publish_failures_total            publishes the broker did not acknowledge
//   mmi_fleet_sim_publish_retries_total             failed publishes sent again (next tick)
//   mmi_fleet_sim_retry_dropped_total               failed publishes dropped on a full retry queue
//   mmi_fleet_sim_intake_dropped_total              received events dropped on a full queue
//   mmi_fleet_sim_refreshes_postponed_total         due reconciledAt refreshes put off a round
//                                                   while received events were backlogged
//   mmi_fleet_sim_intake_queue_depth                received events waiting for the loop
//   mmi_fleet_sim_churn_backlog                     collected churn events not yet published
//   mmi_fleet_sim_connected                         1 while the transport is connected
//   mmi_fleet_sim_subscribed_clusters               clusters whose subscription is active (gRPC
//                                                   broker: one Subscribe stream per cluster)
//   mmi_fleet_sim_clusters                          simulated clusters
//   mmi_fleet_sim_applications                      works currently held across the fleet
//
// Thread-safe (prometheus-cpp metrics are atomic).
#pragma once

#include <string_view>

#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/registry.h"

namespace mmi::fleet_sim {

struct FleetMetrics {
  explicit FleetMetrics(prometheus::Registry& registry);

  prometheus::Counter& SpecsReceived(std::string_view action);
  prometheus::Counter& StatusesSent(std::string_view reason);
  prometheus::Counter& Rejected(std::string_view reason);

  prometheus::Family<prometheus::Counter>& specs_received;
  prometheus::Family<prometheus::Counter>& statuses_sent;
  prometheus::Counter& status_resyncs_answered;
  prometheus::Counter& spec_resyncs_sent;
  prometheus::Family<prometheus::Counter>& rejected;
  prometheus::Counter& publish_failures;
  prometheus::Counter& publish_retries;
  prometheus::Counter& retry_dropped;
  prometheus::Counter& intake_dropped;
  prometheus::Counter& refreshes_postponed;
  prometheus::Gauge& intake_queue_depth;
  prometheus::Gauge& churn_backlog;
  prometheus::Gauge& connected;
  prometheus::Gauge& subscribed_clusters;
  prometheus::Gauge& clusters;
  prometheus::Gauge& applications;
};

}  // namespace mmi::fleet_sim
