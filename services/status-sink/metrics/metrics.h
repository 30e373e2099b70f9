// The status sink's metrics, declared in one struct built from an injected registry (STYLE.md §8).
//
//   mmi_status_events_received_total                      status events taken from the transport
//   mmi_status_events_dropped_total{reason}               stale, duplicate, malformed, not_status,
//       no_feedback, unknown_resource, cluster_mismatch, queue_full, overflow, unchanged
//   mmi_status_events_coalesced_total                     a pending report replaced by a newer one
//   mmi_status_acks_malformed_total                       reports whose dispatchVersion is no
//                                                         version: used, unacknowledged
//   mmi_status_updates_total{result}                      hub writes of a status: ok, not_found,
//                                                         invalid, retry
//   mmi_status_progressing_writes_total{result}           extra hub writes of health Progressing
//                                                         before a Healthy status (same results)
//   mmi_status_write_duration_seconds                     one hub PATCH (both kinds above)
//   mmi_status_queue_depth{queue}                         intake, lookup, pending, in_flight,
//                                                         persist, lost, lost_asked
//   mmi_status_lag_seconds{write=material|volatile}       agent event time -> hub write done
//   mmi_status_deletions_confirmed_total                  Deleted=True handed to the dispatcher
//   mmi_status_resync_requests_total{result}              ok, error
//   mmi_status_resync_suppressed_total                    resync triggers deferred by the minimum
//                                                         interval (served by a later resync)
//   mmi_status_lost_unanswered_total{outcome}             lost reports asked for and not answered
//                                                         in time: asked_again, given_up
//   mmi_status_store_errors_total{operation}              lookup, save, resume, resync, counts,
//                                                         deletion
//   mmi_appset_applications{appset_namespace,appset_name,sync,health}   the fleet report
// Thread-safe (prometheus-cpp metrics are atomic; SetAppSetCounts from one thread at a time).
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "libs/store/status_store.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "services/status-sink/metrics/outcomes.h"

namespace mmi::status_sink {

// kLost: resources whose report was dropped for want of room, waiting for a resync that lists
// only them (StatusResync, resync/status_resync.h); kLostAsked: listed in such a resync, waiting
// for the agent's answer.
enum class Queue { kIntake, kLookup, kPending, kInFlight, kPersist, kLost, kLostAsked };

class SinkMetrics {
 public:
  explicit SinkMetrics(prometheus::Registry& registry);

  void Received() { received_.Increment(); }
  void Dropped(DropReason reason) {
    dropped_.Add({{"reason", std::string(DropReasonName(reason))}}).Increment();
  }
  void Coalesced() { coalesced_.Increment(); }
  // A report whose `dispatchVersion` feedback value is no dispatch version: its status is used,
  // its acknowledgement left out.
  void AckMalformed() { acks_malformed_.Increment(); }
  void Write(WriteResult result, std::chrono::steady_clock::duration elapsed);
  // The Progressing write before a Healthy status (not counted in Write()).
  void ProgressingWrite(WriteResult result, std::chrono::steady_clock::duration elapsed);
  // `volatile_only`: the write changed only reconciledAt/observedAt (label write="volatile",
  // else write="material").
  void Lag(std::chrono::system_clock::duration lag, bool volatile_only);
  void QueueDepth(Queue queue, double depth);
  void DeletionConfirmed() { deletions_.Increment(); }
  void Resync(bool ok) { resyncs_.Add({{"result", ok ? "ok" : "error"}}).Increment(); }
  void ResyncSuppressed(double triggers) { resync_suppressed_.Increment(triggers); }
  // A lost report asked for whose answer did not come in time: asked for again, or (after the
  // last ask) given up on.
  void LostUnanswered(bool given_up) {
    (given_up ? lost_given_up_ : lost_asked_again_).Increment();
  }
  // A manifest render change without an agent event: the status mapped again from the last
  // agent report (`rederived`) or, with none held, asked of the agent by a status resync.
  void RenderChange(bool rederived) {
    (rederived ? render_rederived_ : render_resync_).Increment();
  }
  void StoreError(std::string_view operation) {
    store_errors_.Add({{"operation", std::string(operation)}}).Increment();
  }
  // Replaces the fleet report; series of (appset, sync, health) no longer present are removed.
  void SetAppSetCounts(const std::vector<store::AppSetCount>& counts);

  // Hub writes with result ok so far (tests, and the integration test through /metrics).
  double writes_ok() const { return writes_ok_->Value(); }

 private:
  prometheus::Counter& received_;
  prometheus::Family<prometheus::Counter>& dropped_;
  prometheus::Counter& coalesced_;
  prometheus::Counter& acks_malformed_;
  prometheus::Family<prometheus::Counter>& writes_;
  prometheus::Counter* writes_ok_;
  prometheus::Family<prometheus::Counter>& progressing_writes_;
  prometheus::Histogram& write_duration_;
  prometheus::Family<prometheus::Histogram>& lag_family_;
  prometheus::Histogram& lag_material_;  // writes that change sync, health, ...
  prometheus::Histogram& lag_volatile_;  // reconciledAt/observedAt-only writes (throttled)
  prometheus::Family<prometheus::Gauge>& queue_depth_;
  prometheus::Counter& deletions_;
  prometheus::Family<prometheus::Counter>& resyncs_;
  prometheus::Counter& resync_suppressed_;
  prometheus::Family<prometheus::Counter>& lost_unanswered_;
  prometheus::Counter& lost_asked_again_;
  prometheus::Counter& lost_given_up_;
  prometheus::Family<prometheus::Counter>& render_changes_;
  prometheus::Counter& render_rederived_;
  prometheus::Counter& render_resync_;
  prometheus::Family<prometheus::Counter>& store_errors_;
  prometheus::Family<prometheus::Gauge>& appsets_;
  std::map<std::tuple<std::string, std::string, std::string, std::string>, prometheus::Gauge*>
      appset_series_;
};

}  // namespace mmi::status_sink
