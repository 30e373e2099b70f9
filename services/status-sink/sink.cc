#include "services/status-sink/sink.h"

#include <utility>

#include "absl/time/time.h"
#include "services/status-sink/metrics/sink_log.h"

namespace mmi::status_sink {
namespace {

// How often LogDrops may write its summary lines.
constexpr std::chrono::seconds kDropLogInterval{30};

}  // namespace

Sink::Sink(SinkSettings settings, transport::Subscriber& subscriber,
           transport::Publisher& publisher, store::StatusStore& store, Writer& writer,
           Executor& store_executor, const Clock& clock, SinkMetrics& metrics,
           const RollingSyncLookup* rolling_sync)
    : settings_(std::move(settings)),
      subscriber_(subscriber),
      store_(store),
      clock_(clock),
      metrics_(metrics),
      loop_(clock, "status-sink"),
      coalescer_(settings_.coalescer, clock),
      resync_(StatusResyncSettings{.source_id = settings_.source_id,
                                   .chunk = settings_.resync_chunk,
                                   .max_pending = settings_.coalescer.max_pending,
                                   .min_interval = settings_.status_resync_min_interval,
                                   .lost = {.max_lost = settings_.max_lost,
                                            .answer_timeout = settings_.lost_answer_timeout,
                                            .asks = settings_.lost_asks},
                                   .retry_backoff = settings_.retry_backoff},
              publisher, store, store_executor, on_loop_, clock, metrics, coalescer_),
      manifest_payloads_(settings_.max_manifest_payloads),
      manifest_statuses_(manifest_payloads_, clock, settings_.max_manifest_statuses),
      hub_apps_(
          HubAppsSettings{.lookup_batch = settings_.lookup_batch,
                          .max_awaiting = settings_.max_awaiting_lookup,
                          .retry_backoff = settings_.retry_backoff},
          store, store_executor, on_loop_, clock, metrics,
          [this](const store::HubAppRef& ref, AwaitingReport item) {
            intake_.Admit(ref, std::move(item));
          },
          &manifest_statuses_, [this](const store::HubAppRef& ref) { OnManifestRefreshed(ref); }),
      intake_(
          IntakeSettings{.ignore_resource_health_messages =
                             settings_.coalescer.ignore_resource_health_messages,
                         .max_pending = settings_.coalescer.max_pending},
          coalescer_, hub_apps_, resync_, clock, metrics, [this] { hub_writes_.Pump(); },
          &manifest_statuses_),
      saver_(AppliedStatusSaverSettings{.batch = settings_.persist_batch,
                                        .interval = settings_.persist_interval,
                                        .retry_backoff = settings_.retry_backoff},
             store, store_executor, on_loop_, clock, metrics),
      hub_writes_(
          HubWritesSettings{.max_in_flight = settings_.max_in_flight,
                            .progressing_before_healthy = settings_.progressing_before_healthy,
                            .patch = settings_.patch,
                            .retry_backoff = settings_.retry_backoff},
          coalescer_, hub_apps_, writer, saver_, store, store_executor, on_loop_, clock, metrics,
          rolling_sync),
      fleet_report_(settings_.counts_interval, store, store_executor, on_loop_, clock, metrics) {}

Sink::~Sink() {
  Stop(std::chrono::milliseconds(0));
  loop_.Stop();  // a test's loop: drops what is queued while the state is still there
}

absl::Status Sink::Resume() {
  int rows = 0;
  absl::Status status = store_.ForEachAppliedStatus([&](const store::AppliedStatus& applied) {
    coalescer_.Restore(applied);
    ++rows;
  });
  if (!status.ok()) {
    metrics_.StoreError("resume");
    return status;
  }
  SinkLog().Info("resumed applied statuses from the store", {{"resources", rows}});
  resumed_.store(true);
  return absl::OkStatus();
}

absl::Status Sink::Subscribe() {
  return subscriber_.Start(
      [this](cloudevents::Event event, transport::AckFn ack) {
        if (gate_.closed.load()) {
          // Stopping: left unacknowledged, so Kafka redelivers it and MQTT/gRPC recover it
          // through the status resync of the next start.
          return;
        }
        if (gate_.depth.load() >= settings_.intake_capacity) {
          // Back-pressure: drop now, recover through a status resync once the loop caught up.
          metrics_.Dropped(DropReason::kQueueFull);
          resync_.AskAfterLoss();
          std::move(ack)();
          return;
        }
        ++gate_.depth;
        Post([this, event = std::move(event), ack = std::move(ack)]() mutable {
          --gate_.depth;
          intake_.Handle(event, std::move(ack));
        });
      },
      [this](bool resubscribed) {
        // Events may have been missed while we were away (or down): ask for what changed.
        resync_.AskAfterSubscribe();
        Post([resubscribed] {
          SinkLog().Info("status subscription active", {{"resubscribed", resubscribed}});
        });
      });
}

absl::Status Sink::Start() {
  if (life_.started.exchange(true)) {
    return absl::FailedPreconditionError("status sink already started");
  }
  life_.threaded.store(true);
  loop_.Start();
  ScheduleTick();
  return Subscribe();
}

absl::Status Sink::StartWithoutThreadForTest() {
  life_.started.store(true);
  return Subscribe();
}

void Sink::Stop(std::chrono::milliseconds drain) {
  if (!life_.started.load() || life_.stopped.exchange(true)) {
    return;
  }
  gate_.closed.store(true);
  if (!life_.threaded.load()) {
    subscriber_.Stop();
    return;
  }
  Post([this] {
    life_.draining = true;
    saver_.Drain();
  });
  {
    absl::MutexLock lock(&life_.drain_mu);
    if (!life_.drain_mu.AwaitWithTimeout(absl::Condition(&life_.drained),
                                         absl::FromChrono(drain))) {
      SinkLog().Warn("stopping before every pending status was written",
                     {{"drain_ms", static_cast<int64_t>(drain.count())}});
    }
  }
  life_.abandoned.store(true);
  loop_.Stop();
  // Only now: acknowledgements of what was drained must still reach the transport.
  subscriber_.Stop();
}

void Sink::ManifestRenderChanged(std::string resource_id) {
  Post([this, id = std::move(resource_id)] { hub_apps_.Refresh(id); });
}

void Sink::OnManifestRefreshed(const store::HubAppRef& ref) { intake_.RenderChanged(ref); }

void Sink::Post(Task task) {
  loop_.Post([this, task = std::move(task)]() mutable {
    if (life_.abandoned.load()) {
      return;  // Stop()'s drain period is over: dropped unrun
    }
    std::move(task)();
    NoteDrained();
  });
}

void Sink::ScheduleTick() {
  loop_.PostAfter(settings_.tick, [this] {
    if (life_.abandoned.load()) {
      return;
    }
    if (clock_.MonotonicNow() - last_tick_ >= settings_.tick) {
      Tick();
    }
    NoteDrained();
    ScheduleTick();
  });
}

void Sink::NoteDrained() {
  if (life_.draining && Idle()) {
    absl::MutexLock lock(&life_.drain_mu);
    life_.drained = true;
  }
}

void Sink::RunUntilIdleForTest() {
  for (int round = 0; round < 1000; ++round) {
    const int ran = loop_.RunQueuedForTest();
    Tick();
    if (ran == 0 && loop_.Pending() == 0) {
      return;
    }
  }
}

bool Sink::Idle() const {
  return gate_.depth.load() == 0 && hub_apps_.awaiting() == 0 && coalescer_.pending() == 0 &&
         coalescer_.in_flight() == 0 && saver_.Idle();
}

void Sink::Tick() {
  const auto now = clock_.MonotonicNow();
  last_tick_ = now;
  resync_.Tick(now, /*may_request=*/!life_.draining,
               /*intake_has_room=*/gate_.depth.load() <= settings_.intake_capacity / 2,
               hub_apps_.awaiting());
  hub_apps_.StartLookup();
  hub_writes_.Pump();
  saver_.Flush();
  if (!life_.draining) {
    fleet_report_.Tick(now);
  }
  LogDrops(now);
  UpdateQueueGauges();
}

void Sink::LogDrops(std::chrono::steady_clock::time_point now) {
  intake_.FlushWarnings();
  hub_apps_.FlushWarnings();
  hub_writes_.FlushWarnings();
  if ((!intake_.HasUnlogged() && !resync_.HasUnlogged()) || now < next_drop_log_at_) {
    return;
  }
  next_drop_log_at_ = now + kDropLogInterval;
  resync_.LogUnlogged();
  intake_.LogUnlogged();
}

void Sink::UpdateQueueGauges() {
  metrics_.QueueDepth(Queue::kIntake, static_cast<double>(gate_.depth.load()));
  metrics_.QueueDepth(Queue::kLookup, static_cast<double>(hub_apps_.awaiting()));
  metrics_.QueueDepth(Queue::kPending, static_cast<double>(coalescer_.pending()));
  metrics_.QueueDepth(Queue::kInFlight, static_cast<double>(coalescer_.in_flight()));
  metrics_.QueueDepth(Queue::kPersist, static_cast<double>(saver_.queued()));
  metrics_.QueueDepth(Queue::kLost, static_cast<double>(resync_.lost()));
  metrics_.QueueDepth(Queue::kLostAsked, static_cast<double>(resync_.asked()));
}

}  // namespace mmi::status_sink
