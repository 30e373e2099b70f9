// The dispatcher's own metrics, declared in one struct built from an injected registry
// (STYLE.md §8). Label values come from closed sets only; never names or ids.
//
//   mmi_dispatcher_dispatches_total{transport,action,result}  one per outbox event settled:
//       action create|update|delete, result ok|retry|dropped|converted_to_update|
//       converted_to_create (Maestro already had / had lost the resource)
//   mmi_dispatcher_decisions_total{decision}  one per reconcile: create, update, delete,
//       unchanged, request_stripped (the hub only lost the request we stripped: not sent),
//       skipped_local_cluster, unknown_cluster, invalid, waiting_deletion,
//       finalizer_released, delete_resent (an unconfirmed delete request sent again; it also
//       counts as delete)
//   mmi_dispatch_queue_depth                  keys waiting for the reconcile loop
//   mmi_dispatcher_outbox_pending             recorded events not yet accepted by the broker
//   mmi_dispatcher_outbox_paused              1 while the reconciler takes no new keys because
//       the outbox holds ReconcilerSettings::max_outbox events ready or in flight (until half)
//   mmi_dispatcher_publish_latency_seconds{transport}  recorded in PostgreSQL -> broker accepted
//   mmi_store_query_duration_seconds{operation}        DispatchStore calls
//   mmi_store_errors_total{operation}
//   mmi_dispatcher_unknown_cluster_total      Applications found targeting an unknown cluster
//   mmi_dispatcher_parked_applications        Applications waiting for their ManagedCluster
//   mmi_dispatcher_hub_writes_total{operation,result}  operation strip_operation|
//       release_finalizer|event, result ok|conflict|error
//   mmi_dispatcher_spec_resync_requests_total{result}  result ok|error|ignored|
//       response_retried|response_dropped|answered_as_deleting (a spec answer sent as a delete:
//       the resource's deletion was decided after the answer was built)
//   mmi_dispatcher_tracked_resources          resources in the dispatch state
//   mmi_dispatcher_deferred_until_synced_total  keys put aside while the Application list was
//       read after a (re)start: their Application was not cached yet (absence proves nothing
//       before the list is complete); all keys are reconciled once it is
//   mmi_dispatcher_decided_before_load_total  Applications changed on the hub while the dispatch
//       state was still loading after a (re)start, decided from their own store rows
//   mmi_dispatcher_deletion_checks_total{result}  unconfirmed deletions looked up in Maestro's
//       REST API (gRPC; deletion_check.h): gone (404: confirmed) | present | error | dropped
//       (the check queue was full: checked at the resource's next resend)
//   mmi_dispatcher_deletion_checks_queued     deletions waiting for their REST look-up
//   mmi_dispatcher_ack_republishes_total{reason}  unacknowledged changes published again by the
//       AckCheck (ack_check.h): overtaken (a later change of the cluster acknowledged) | passed
//       (a change published `timeout` later, of any cluster, acknowledged) | stalled (no
//       acknowledgement arrived since the last check; at most ackCheck.maxWhileStalled a stall)
//   mmi_dispatcher_ack_waiting                unacknowledged changes of reporting agents that the
//       last check left alone: acknowledgements still arrive, so they are queued in a source that
//       is behind (or a stall's budget is spent); at most ackCheck.maxPerCheck
//
// Thread-safe (prometheus-cpp metrics are atomic).
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace mmi::dispatcher {

class DispatcherMetrics {
 public:
  // `registry` must outlive the metrics. `transport` is the transport label ("mqtt", ...).
  DispatcherMetrics(prometheus::Registry& registry, std::string transport);

  void Dispatch(std::string_view action, std::string_view result);
  void Decision(std::string_view decision);
  void PublishLatency(std::chrono::nanoseconds latency);
  void StoreQuery(std::string_view operation, std::chrono::nanoseconds elapsed, bool ok);
  void HubWrite(std::string_view operation, std::string_view result);
  void SpecResync(std::string_view result);
  void UnknownCluster() { unknown_cluster_.Increment(); }
  void DeletionCheck(std::string_view result);
  void AckRepublish(std::string_view reason);

  prometheus::Gauge& queue_depth() { return queue_depth_; }
  prometheus::Gauge& outbox_pending() { return outbox_pending_; }
  prometheus::Gauge& outbox_paused() { return outbox_paused_; }
  prometheus::Gauge& parked() { return parked_; }
  prometheus::Gauge& tracked() { return tracked_; }
  prometheus::Gauge& deletion_checks_queued() { return deletion_checks_queued_; }
  prometheus::Gauge& ack_waiting() { return ack_waiting_; }
  prometheus::Counter& deferred_until_synced() { return deferred_until_synced_; }
  prometheus::Counter& decided_before_load() { return decided_before_load_; }
  const std::string& transport() const { return transport_; }

 private:
  std::string transport_;
  prometheus::Family<prometheus::Counter>& dispatches_;
  prometheus::Family<prometheus::Counter>& decisions_;
  prometheus::Family<prometheus::Histogram>& publish_latency_;
  prometheus::Family<prometheus::Histogram>& store_duration_;
  prometheus::Family<prometheus::Counter>& store_errors_;
  prometheus::Family<prometheus::Counter>& hub_writes_;
  prometheus::Family<prometheus::Counter>& spec_resync_;
  prometheus::Counter& unknown_cluster_;
  prometheus::Gauge& queue_depth_;
  prometheus::Gauge& outbox_pending_;
  prometheus::Gauge& outbox_paused_;
  prometheus::Gauge& parked_;
  prometheus::Gauge& tracked_;
  prometheus::Family<prometheus::Counter>& deletion_checks_;
  prometheus::Gauge& deletion_checks_queued_;
  prometheus::Counter& deferred_until_synced_;
  prometheus::Counter& decided_before_load_;
  prometheus::Family<prometheus::Counter>& ack_republishes_;
  prometheus::Gauge& ack_waiting_;
};

}  // namespace mmi::dispatcher
