#include "tools/fleet-sim/fleet_metrics.h"

#include <string>

namespace mmi::fleet_sim {

FleetMetrics::FleetMetrics(prometheus::Registry& registry)
    : specs_received(prometheus::BuildCounter()
                         .Name("mmi_fleet_sim_specs_received_total")
                         .Help("Spec events the simulated agents received, by action.")
                         .Register(registry)),
      statuses_sent(prometheus::BuildCounter()
                        .Name("mmi_fleet_sim_statuses_sent_total")
                        .Help("Status events the simulated agents handed to the transport.")
                        .Register(registry)),
      status_resyncs_answered(prometheus::BuildCounter()
                                  .Name("mmi_fleet_sim_status_resyncs_answered_total")
                                  .Help("Status resync requests answered by a simulated agent.")
                                  .Register(registry)
                                  .Add({})),
      spec_resyncs_sent(prometheus::BuildCounter()
                            .Name("mmi_fleet_sim_spec_resyncs_sent_total")
                            .Help("Spec resync requests sent on (re)connect.")
                            .Register(registry)
                            .Add({})),
      rejected(prometheus::BuildCounter()
                   .Name("mmi_fleet_sim_events_rejected_total")
                   .Help("Received events the simulated agents dropped, by reason.")
                   .Register(registry)),
      publish_failures(prometheus::BuildCounter()
                           .Name("mmi_fleet_sim_publish_failures_total")
                           .Help("Publishes the broker did not acknowledge.")
                           .Register(registry)
                           .Add({})),
      publish_retries(prometheus::BuildCounter()
                          .Name("mmi_fleet_sim_publish_retries_total")
                          .Help("Failed publishes sent again on the next tick.")
                          .Register(registry)
                          .Add({})),
      retry_dropped(prometheus::BuildCounter()
                        .Name("mmi_fleet_sim_retry_dropped_total")
                        .Help("Failed publishes dropped because the retry queue was full.")
                        .Register(registry)
                        .Add({})),
      intake_dropped(prometheus::BuildCounter()
                         .Name("mmi_fleet_sim_intake_dropped_total")
                         .Help("Received events dropped because the intake queue was full.")
                         .Register(registry)
                         .Add({})),
      refreshes_postponed(prometheus::BuildCounter()
                              .Name("mmi_fleet_sim_refreshes_postponed_total")
                              .Help("Due reconciledAt refreshes put off by one refresh interval "
                                    "because received events were backlogged.")
                              .Register(registry)
                              .Add({})),
      intake_queue_depth(prometheus::BuildGauge()
                             .Name("mmi_fleet_sim_intake_queue_depth")
                             .Help("Received events waiting for the simulator loop.")
                             .Register(registry)
                             .Add({})),
      churn_backlog(prometheus::BuildGauge()
                        .Name("mmi_fleet_sim_churn_backlog")
                        .Help("Collected churn (refreshes, transitions) not yet published; the "
                              "loop publishes it in slices between received events.")
                        .Register(registry)
                        .Add({})),
      connected(prometheus::BuildGauge()
                    .Name("mmi_fleet_sim_connected")
                    .Help("1 while the transport is connected to the broker.")
                    .Register(registry)
                    .Add({})),
      subscribed_clusters(prometheus::BuildGauge()
                              .Name("mmi_fleet_sim_subscribed_clusters")
                              .Help("Simulated clusters whose subscription is active.")
                              .Register(registry)
                              .Add({})),
      clusters(prometheus::BuildGauge()
                   .Name("mmi_fleet_sim_clusters")
                   .Help("Simulated managed clusters.")
                   .Register(registry)
                   .Add({})),
      applications(prometheus::BuildGauge()
                       .Name("mmi_fleet_sim_applications")
                       .Help("Works currently held by the simulated agents.")
                       .Register(registry)
                       .Add({})) {}

prometheus::Counter& FleetMetrics::SpecsReceived(std::string_view action) {
  return specs_received.Add({{"action", std::string(action)}});
}

prometheus::Counter& FleetMetrics::StatusesSent(std::string_view reason) {
  return statuses_sent.Add({{"reason", std::string(reason)}});
}

prometheus::Counter& FleetMetrics::Rejected(std::string_view reason) {
  return rejected.Add({{"reason", std::string(reason)}});
}

}  // namespace mmi::fleet_sim
