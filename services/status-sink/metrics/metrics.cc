#include "services/status-sink/metrics/metrics.h"

namespace mmi::status_sink {
namespace {

prometheus::Histogram::BucketBoundaries LatencyBuckets() {
  return {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
}

std::string_view QueueName(Queue queue) {
  switch (queue) {
    case Queue::kIntake:
      return "intake";
    case Queue::kLookup:
      return "lookup";
    case Queue::kPending:
      return "pending";
    case Queue::kInFlight:
      return "in_flight";
    case Queue::kPersist:
      return "persist";
    case Queue::kLost:
      return "lost";
    case Queue::kLostAsked:
      return "lost_asked";
  }
  return "other";
}

// A metric family registered in `registry`.
prometheus::Family<prometheus::Counter>& CounterFamily(prometheus::Registry& registry,
                                                       const std::string& name,
                                                       const std::string& help) {
  return prometheus::BuildCounter().Name(name).Help(help).Register(registry);
}
prometheus::Family<prometheus::Gauge>& GaugeFamily(prometheus::Registry& registry,
                                                   const std::string& name,
                                                   const std::string& help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(registry);
}
prometheus::Family<prometheus::Histogram>& HistogramFamily(prometheus::Registry& registry,
                                                           const std::string& name,
                                                           const std::string& help) {
  return prometheus::BuildHistogram().Name(name).Help(help).Register(registry);
}

}  // namespace

SinkMetrics::SinkMetrics(prometheus::Registry& registry)
    : received_(CounterFamily(registry, "mmi_status_events_received_total",
                              "Status events taken from the transport")
                    .Add({})),
      dropped_(CounterFamily(registry, "mmi_status_events_dropped_total",
                             "Status events that caused no hub write, by reason")),
      coalesced_(CounterFamily(registry, "mmi_status_events_coalesced_total",
                               "Pending status reports replaced by a newer one before their write")
                     .Add({})),
      acks_malformed_(CounterFamily(registry, "mmi_status_acks_malformed_total",
                                    "Status reports whose dispatchVersion feedback value is no "
                                    "dispatch version: the status is used, the acknowledgement "
                                    "left out")
                          .Add({})),
      writes_(CounterFamily(registry, "mmi_status_updates_total",
                            "Hub Application status writes, by result")),
      writes_ok_(&writes_.Add({{"result", "ok"}})),
      progressing_writes_(CounterFamily(registry, "mmi_status_progressing_writes_total",
                                        "Extra hub writes of health Progressing before a Healthy "
                                        "status (RollingSync transition), by result")),
      write_duration_(HistogramFamily(registry, "mmi_status_write_duration_seconds",
                                      "Duration of one hub status PATCH")
                          .Add({}, LatencyBuckets())),
      lag_family_(HistogramFamily(registry, "mmi_status_lag_seconds",
                                  "From the agent's status event time to the hub write, by write: "
                                  "material (sync, health, ... changed) or volatile "
                                  "(reconciledAt/observedAt only, throttled)")),
      lag_material_(lag_family_.Add({{"write", "material"}}, LatencyBuckets())),
      lag_volatile_(lag_family_.Add({{"write", "volatile"}}, LatencyBuckets())),
      queue_depth_(GaugeFamily(registry, "mmi_status_queue_depth",
                               "Items waiting in the status sink, by queue")),
      deletions_(CounterFamily(registry, "mmi_status_deletions_confirmed_total",
                               "Completed deletions handed to the dispatcher")
                     .Add({})),
      resyncs_(CounterFamily(registry, "mmi_status_resync_requests_total",
                             "Status resync requests published, by result")),
      resync_suppressed_(CounterFamily(registry, "mmi_status_resync_suppressed_total",
                                       "Status resync triggers deferred by the minimum interval "
                                       "between resyncs; a later resync serves them")
                             .Add({})),
      lost_unanswered_(
          CounterFamily(registry, "mmi_status_lost_unanswered_total",
                        "Lost reports asked for by a status resync whose answer did not "
                        "come in time, by outcome (asked_again, given_up)")),
      lost_asked_again_(lost_unanswered_.Add({{"outcome", "asked_again"}})),
      lost_given_up_(lost_unanswered_.Add({{"outcome", "given_up"}})),
      render_changes_(CounterFamily(registry, "mmi_status_render_changes_total",
                                    "Manifest render changes without an agent event (revision, "
                                    "render error), by path: rederived (mapped again from the last "
                                    "agent report) or resync (none held: the agent is asked)")),
      render_rederived_(render_changes_.Add({{"path", "rederived"}})),
      render_resync_(render_changes_.Add({{"path", "resync"}})),
      store_errors_(CounterFamily(registry, "mmi_status_store_errors_total",
                                  "Failed store operations of the status sink, by operation")),
      appsets_(GaugeFamily(registry, "mmi_appset_applications",
                           "Applications per ApplicationSet by sync and health status")) {
  for (auto reason :
       {DropReason::kStale, DropReason::kDuplicate, DropReason::kMalformed,
        DropReason::kUnknownResource, DropReason::kUnchanged, DropReason::kOverflow,
        DropReason::kVolatileShed, DropReason::kDeletedWhileLive, DropReason::kManifestsNotHeld}) {
    dropped_.Add({{"reason", std::string(DropReasonName(reason))}});
  }
  for (auto result : {WriteResult::kNotFound, WriteResult::kInvalid, WriteResult::kRetry}) {
    writes_.Add({{"result", std::string(WriteResultName(result))}});
  }
  for (auto result :
       {WriteResult::kOk, WriteResult::kNotFound, WriteResult::kInvalid, WriteResult::kRetry}) {
    progressing_writes_.Add({{"result", std::string(WriteResultName(result))}});
  }
}

void SinkMetrics::Write(WriteResult result, std::chrono::steady_clock::duration elapsed) {
  writes_.Add({{"result", std::string(WriteResultName(result))}}).Increment();
  write_duration_.Observe(std::chrono::duration<double>(elapsed).count());
}

void SinkMetrics::ProgressingWrite(WriteResult result,
                                   std::chrono::steady_clock::duration elapsed) {
  progressing_writes_.Add({{"result", std::string(WriteResultName(result))}}).Increment();
  write_duration_.Observe(std::chrono::duration<double>(elapsed).count());
}

void SinkMetrics::Lag(std::chrono::system_clock::duration lag, bool volatile_only) {
  (volatile_only ? lag_volatile_ : lag_material_)
      .Observe(std::max(0.0, std::chrono::duration<double>(lag).count()));
}

void SinkMetrics::QueueDepth(Queue queue, double depth) {
  queue_depth_.Add({{"queue", std::string(QueueName(queue))}}).Set(depth);
}

void SinkMetrics::SetAppSetCounts(const std::vector<store::AppSetCount>& counts) {
  std::map<std::tuple<std::string, std::string, std::string, std::string>, prometheus::Gauge*> next;
  for (const auto& c : counts) {
    auto key = std::make_tuple(c.appset_namespace, c.appset_name, c.sync_status, c.health_status);
    auto& gauge = appsets_.Add({{"appset_namespace", c.appset_namespace},
                                {"appset_name", c.appset_name},
                                {"sync", c.sync_status},
                                {"health", c.health_status}});
    gauge.Set(static_cast<double>(c.count));
    next[key] = &gauge;
  }
  for (const auto& [key, gauge] : appset_series_) {
    if (next.count(key) == 0) {
      appsets_.Remove(gauge);
    }
  }
  appset_series_ = std::move(next);
}

}  // namespace mmi::status_sink
