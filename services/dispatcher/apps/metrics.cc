#include "services/dispatcher/apps/metrics.h"

#include <utility>

namespace mmi::dispatcher {
namespace {

prometheus::Histogram::BucketBoundaries LatencyBuckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
}

std::string S(std::string_view v) { return std::string(v); }

}  // namespace

DispatcherMetrics::DispatcherMetrics(prometheus::Registry& registry, std::string transport)
    : transport_(std::move(transport)),
      dispatches_(prometheus::BuildCounter()
                      .Name("mmi_dispatcher_dispatches_total")
                      .Help("Outbox events settled, by transport, action and result")
                      .Register(registry)),
      decisions_(prometheus::BuildCounter()
                     .Name("mmi_dispatcher_decisions_total")
                     .Help("Reconcile decisions of the dispatcher")
                     .Register(registry)),
      publish_latency_(prometheus::BuildHistogram()
                           .Name("mmi_dispatcher_publish_latency_seconds")
                           .Help("From recording a change in PostgreSQL to broker acceptance")
                           .Register(registry)),
      store_duration_(prometheus::BuildHistogram()
                          .Name("mmi_store_query_duration_seconds")
                          .Help("Duration of DispatchStore calls")
                          .Register(registry)),
      store_errors_(prometheus::BuildCounter()
                        .Name("mmi_store_errors_total")
                        .Help("Failed DispatchStore calls")
                        .Register(registry)),
      hub_writes_(prometheus::BuildCounter()
                      .Name("mmi_dispatcher_hub_writes_total")
                      .Help("Writes to hub objects (strip operation, release finalizer, events)")
                      .Register(registry)),
      spec_resync_(prometheus::BuildCounter()
                       .Name("mmi_dispatcher_spec_resync_requests_total")
                       .Help("Spec resync requests from agents, by result")
                       .Register(registry)),
      unknown_cluster_(
          prometheus::BuildCounter()
              .Name("mmi_dispatcher_unknown_cluster_total")
              .Help("Applications found targeting a ManagedCluster that does not exist")
              .Register(registry)
              .Add({})),
      queue_depth_(prometheus::BuildGauge()
                       .Name("mmi_dispatch_queue_depth")
                       .Help("Application keys waiting for the reconcile loop")
                       .Register(registry)
                       .Add({})),
      outbox_pending_(prometheus::BuildGauge()
                          .Name("mmi_dispatcher_outbox_pending")
                          .Help("Recorded events not yet accepted by the broker")
                          .Register(registry)
                          .Add({})),
      outbox_paused_(prometheus::BuildGauge()
                         .Name("mmi_dispatcher_outbox_paused")
                         .Help("1 while the reconciler takes no new keys: the outbox is full")
                         .Register(registry)
                         .Add({})),
      parked_(prometheus::BuildGauge()
                  .Name("mmi_dispatcher_parked_applications")
                  .Help("Applications waiting for their ManagedCluster to appear")
                  .Register(registry)
                  .Add({})),
      tracked_(prometheus::BuildGauge()
                   .Name("mmi_dispatcher_tracked_resources")
                   .Help("Dispatched resources in the dispatch state")
                   .Register(registry)
                   .Add({})),
      deletion_checks_(prometheus::BuildCounter()
                           .Name("mmi_dispatcher_deletion_checks_total")
                           .Help("Unconfirmed deletions looked up in Maestro's REST API, by result")
                           .Register(registry)),
      deletion_checks_queued_(prometheus::BuildGauge()
                                  .Name("mmi_dispatcher_deletion_checks_queued")
                                  .Help("Unconfirmed deletions waiting for their REST look-up")
                                  .Register(registry)
                                  .Add({})),
      deferred_until_synced_(
          prometheus::BuildCounter()
              .Name("mmi_dispatcher_deferred_until_synced_total")
              .Help("Keys put aside until the Application list is complete (not cached yet)")
              .Register(registry)
              .Add({})),
      decided_before_load_(
          prometheus::BuildCounter()
              .Name("mmi_dispatcher_decided_before_load_total")
              .Help("Changed Applications decided from their own store rows while the dispatch "
                    "state was still loading after a (re)start")
              .Register(registry)
              .Add({})),
      ack_republishes_(prometheus::BuildCounter()
                           .Name("mmi_dispatcher_ack_republishes_total")
                           .Help("Unacknowledged changes published again, by the evidence of loss")
                           .Register(registry)),
      ack_waiting_(prometheus::BuildGauge()
                       .Name("mmi_dispatcher_ack_waiting")
                       .Help("Unacknowledged changes left alone at the last check: "
                             "acknowledgements still arrive")
                       .Register(registry)
                       .Add({})) {}

void DispatcherMetrics::Dispatch(std::string_view action, std::string_view result) {
  dispatches_.Add({{"transport", transport_}, {"action", S(action)}, {"result", S(result)}})
      .Increment();
}

void DispatcherMetrics::Decision(std::string_view decision) {
  decisions_.Add({{"decision", S(decision)}}).Increment();
}

void DispatcherMetrics::PublishLatency(std::chrono::nanoseconds latency) {
  publish_latency_.Add({{"transport", transport_}}, LatencyBuckets())
      .Observe(std::chrono::duration<double>(latency).count());
}

void DispatcherMetrics::StoreQuery(std::string_view operation, std::chrono::nanoseconds elapsed,
                                   bool ok) {
  store_duration_.Add({{"operation", S(operation)}}, LatencyBuckets())
      .Observe(std::chrono::duration<double>(elapsed).count());
  if (!ok) {
    store_errors_.Add({{"operation", S(operation)}}).Increment();
  }
}

void DispatcherMetrics::HubWrite(std::string_view operation, std::string_view result) {
  hub_writes_.Add({{"operation", S(operation)}, {"result", S(result)}}).Increment();
}

void DispatcherMetrics::DeletionCheck(std::string_view result) {
  deletion_checks_.Add({{"result", S(result)}}).Increment();
}

void DispatcherMetrics::AckRepublish(std::string_view reason) {
  ack_republishes_.Add({{"reason", S(reason)}}).Increment();
}

void DispatcherMetrics::SpecResync(std::string_view result) {
  spec_resync_.Add({{"result", S(result)}}).Increment();
}

}  // namespace mmi::dispatcher
