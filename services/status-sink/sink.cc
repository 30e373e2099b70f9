#include "services/status-sink/sink.h"

#include <utility>
#include <variant>

#include "absl/time/time.h"

namespace mmi::status_sink {
namespace {

// How often LogDrops may write its summary line.
constexpr std::chrono::seconds kDropLogInterval{30};

}  // namespace

const log::Logger& Sink::Log() {
  static const log::Logger logger("status_sink");
  return logger;
}

Sink::Sink(SinkSettings settings, transport::Subscriber& subscriber,
           transport::Publisher& publisher, store::StatusStore& store, Writer& writer,
           Executor& store_executor, const Clock& clock, SinkMetrics& metrics,
           const RollingSyncLookup* rolling_sync)
    : settings_(std::move(settings)),
      subscriber_(subscriber),
      publisher_(publisher),
      store_(store),
      writer_(writer),
      store_executor_(store_executor),
      clock_(clock),
      metrics_(metrics),
      rolling_sync_(rolling_sync),
      warnings_(Log(), clock_),
      loop_(clock, "status-sink"),
      coalescer_(settings_.coalescer, clock),
      lost_(LostReportsSettings{.max_lost = settings_.max_lost,
                                .answer_timeout = settings_.lost_answer_timeout,
                                .asks = settings_.lost_asks}) {}

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
  Log().Info("resumed applied statuses from the store", {{"resources", rows}});
  resumed_.store(true);
  return absl::OkStatus();
}

absl::Status Sink::Subscribe() {
  return subscriber_.Start(
      [this](cloudevents::Event event, transport::AckFn ack) {
        if (intake_.closed.load()) {
          // Stopping: left unacknowledged, so Kafka redelivers it and MQTT/gRPC recover it
          // through the status resync of the next start.
          return;
        }
        if (intake_.depth.load() >= settings_.intake_capacity) {
          // Back-pressure: drop now, recover through a status resync once the loop caught up.
          metrics_.Dropped(DropReason::kQueueFull);
          ResyncAfterLoss();
          std::move(ack)();
          return;
        }
        ++intake_.depth;
        Post([this, event = std::move(event), ack = std::move(ack)]() mutable {
          --intake_.depth;
          HandleEvent(std::move(event), std::move(ack));
        });
      },
      [this](bool resubscribed) {
        // Events may have been missed while we were away (or down): ask for what changed.
        ++resync_.asks;
        resync_.wanted.store(true);
        Post([resubscribed] {
          Log().Info("status subscription active", {{"resubscribed", resubscribed}});
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
  intake_.closed.store(true);
  if (!life_.threaded.load()) {
    subscriber_.Stop();
    return;
  }
  Post([this] {
    life_.draining = true;
    FlushPersist(/*force=*/true);
  });
  {
    absl::MutexLock lock(&life_.drain_mu);
    if (!life_.drain_mu.AwaitWithTimeout(absl::Condition(&life_.drained),
                                         absl::FromChrono(drain))) {
      Log().Warn("stopping before every pending status was written",
                 {{"drain_ms", static_cast<int64_t>(drain.count())}});
    }
  }
  life_.abandoned.store(true);
  loop_.Stop();
  // Only now: acknowledgements of what was drained must still reach the transport.
  subscriber_.Stop();
}

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
  return intake_.depth.load() == 0 && lookup_.awaiting.empty() && coalescer_.pending() == 0 &&
         coalescer_.in_flight() == 0 && persist_.queue.empty() && !persist_.in_flight;
}

void Sink::Tick() {
  const auto now = clock_.MonotonicNow();
  last_tick_ = now;
  if (resync_.wanted.load() && !life_.draining) {
    if (now < resync_.next_at) {
      DeferResync(now);
    } else if (!resync_.in_flight && now >= resync_.retry_at &&
               intake_.depth.load() <= settings_.intake_capacity / 2) {
      RequestResync();
    }
  } else if (lost_.lost() > 0 && !life_.draining && !resync_.in_flight && now >= resync_.next_at &&
             now >= resync_.retry_at && intake_.depth.load() <= settings_.intake_capacity / 2) {
    RequestLostResync(now);
  }
  ExpireLostAsks(now);
  StartLookup();
  Pump();
  FlushPersist(life_.draining);
  if (!counts_.in_flight && now >= counts_.next_at && !life_.draining) {
    RefreshCounts();
  }
  LogDrops(now);
  UpdateQueueGauges();
}

void Sink::LogDrops(std::chrono::steady_clock::time_point now) {
  warnings_.Flush();
  if ((unlogged_.shed == 0 && unlogged_.overflowed == 0 && unlogged_.lost_resync_failed == 0 &&
       unlogged_.lost_given_up == 0) ||
      now < unlogged_.next_log_at) {
    return;
  }
  unlogged_.next_log_at = now + kDropLogInterval;
  if (unlogged_.lost_given_up > 0) {
    Log().Warn(
        "lost reports asked for by every allowed status resync got no answer; given up until the "
        "next report of each or the next full status resync",
        {{"resources", unlogged_.lost_given_up}, {"asks", settings_.lost_asks}});
    unlogged_.lost_given_up = 0;
  }
  if (unlogged_.lost_resync_failed > 0) {
    Log().Warn(
        "cannot publish status resync requests for lost reports; their resources are asked for "
        "again in a later round",
        {{"failed_requests", unlogged_.lost_resync_failed},
         {"last_error", unlogged_.lost_resync_last_error}});
    unlogged_.lost_resync_failed = 0;
  }
  if (unlogged_.shed == 0 && unlogged_.overflowed == 0) {
    return;
  }
  Log().Warn(
      "status reports dropped for want of room: volatile-only writes shed, the rest overflowed "
      "(remembered and asked for again by status resync)",
      {{"volatile_shed", unlogged_.shed},
       {"overflowed", unlogged_.overflowed},
       {"lost_pending", static_cast<uint64_t>(lost_.lost())},
       {"pending", static_cast<uint64_t>(coalescer_.pending())},
       {"max_pending", static_cast<uint64_t>(settings_.coalescer.max_pending)}});
  unlogged_.shed = 0;
  unlogged_.overflowed = 0;
}

void Sink::UpdateQueueGauges() {
  metrics_.QueueDepth(Queue::kIntake, static_cast<double>(intake_.depth.load()));
  metrics_.QueueDepth(Queue::kLookup, static_cast<double>(lookup_.awaiting_count));
  metrics_.QueueDepth(Queue::kPending, static_cast<double>(coalescer_.pending()));
  metrics_.QueueDepth(Queue::kInFlight, static_cast<double>(coalescer_.in_flight()));
  metrics_.QueueDepth(Queue::kPersist, static_cast<double>(persist_.queue.size()));
  metrics_.QueueDepth(Queue::kLost, static_cast<double>(lost_.lost()));
  metrics_.QueueDepth(Queue::kLostAsked, static_cast<double>(lost_.asked()));
}

std::chrono::milliseconds Sink::RetryDelay(int attempts) const {
  return BackoffDelay(settings_.retry_backoff, attempts);
}

void Sink::Release(std::vector<transport::AckFn>& acks) {
  for (auto& ack : acks) {
    std::move(ack)();
  }
  acks.clear();
}

// --- intake ---------------------------------------------------------------------------------

void Sink::HandleEvent(cloudevents::Event event, transport::AckFn ack) {
  metrics_.Received();
  auto decoded = DecodeStatusReport(event, settings_.coalescer.ignore_resource_health_messages);
  if (auto* rejection = std::get_if<Rejection>(&decoded)) {
    metrics_.Dropped(rejection->reason);
    if (rejection->reason == DropReason::kMalformed) {
      warnings_.malformed.Add(
          event.id,
          {{"event_id", event.id}, {"source", event.source}, {"error", rejection->detail}});
    } else {
      Log().Debug("dropping a status event", {{"event_id", event.id},
                                              {"reason", DropReasonName(rejection->reason)},
                                              {"detail", rejection->detail}});
    }
    std::move(ack)();
    return;
  }
  Awaiting item{std::get<StatusReport>(std::move(decoded)), std::move(ack)};
  auto ref = lookup_.refs.find(item.report.update.resource_id);
  if (ref != lookup_.refs.end()) {
    Admit(ref->second, std::move(item));
    return;
  }
  if (lookup_.awaiting_count >= settings_.max_awaiting_lookup) {
    metrics_.Dropped(DropReason::kOverflow);
    ++unlogged_.overflowed;
    RememberLost(item.report.update.resource_id, item.report.cluster);
    std::move(item.ack)();
    return;
  }
  const std::string key = item.report.update.resource_id;
  lookup_.awaiting[key].push_back(std::move(item));
  ++lookup_.awaiting_count;
  StartLookup();
}

void Sink::Admit(const store::HubAppRef& ref, Awaiting item) {
  if (!item.report.cluster.empty() && item.report.cluster != ref.cluster) {
    // A cluster may only report the resources dispatched to it.
    metrics_.Dropped(DropReason::kClusterMismatch);
    warnings_.wrong_cluster.Add(item.report.event_id, {{"resource", ref.resource_id},
                                                       {"cluster", item.report.cluster},
                                                       {"expected_cluster", ref.cluster},
                                                       {"event_id", item.report.event_id}});
    std::move(item.ack)();
    return;
  }
  if (!item.report.metadata_app.empty() &&
      item.report.metadata_app != ref.hub_namespace + "/" + ref.hub_name) {
    warnings_.other_application.Add(item.report.event_id,
                                    {{"resource", ref.resource_id},
                                     {"metadata_application", item.report.metadata_app},
                                     {"application", ref.hub_namespace + "/" + ref.hub_name}});
  }
  auto outcome = coalescer_.Offer(std::move(item.report.update), std::move(item.ack));
  if (outcome.result != OfferResult::kStale) {
    // A newer report of it arrived (an overflow is remembered as lost again below).
    lost_.AnswerArrived(ref.resource_id);
    if (outcome.result != OfferResult::kOverflow) {
      lost_.Recovered(ref.resource_id);  // nothing left to recover
    }
  }
  Release(outcome.release);
  for (int i = 0; i < outcome.shed; ++i) {
    metrics_.Dropped(DropReason::kVolatileShed);
  }
  unlogged_.shed += static_cast<uint64_t>(outcome.shed);
  switch (outcome.result) {
    case OfferResult::kQueued:
      break;
    case OfferResult::kCoalesced:
      metrics_.Coalesced();
      break;
    case OfferResult::kStale:
      metrics_.Dropped(DropReason::kStale);
      break;
    case OfferResult::kDuplicate:
      metrics_.Dropped(DropReason::kDuplicate);
      break;
    case OfferResult::kUnchanged:
      metrics_.Dropped(DropReason::kUnchanged);
      break;
    case OfferResult::kOverflow:
      metrics_.Dropped(DropReason::kOverflow);
      ++unlogged_.overflowed;
      RememberLost(ref.resource_id, ref.cluster);
      break;
  }
  Pump();
}

void Sink::StartLookup() {
  if (lookup_.in_flight || lookup_.awaiting.empty() || clock_.MonotonicNow() < lookup_.retry_at) {
    return;
  }
  std::vector<std::string> ids;
  for (const auto& [id, items] : lookup_.awaiting) {
    if (ids.size() >= settings_.lookup_batch) {
      break;
    }
    ids.push_back(id);
  }
  lookup_.in_flight = true;
  store_executor_.Post([this, ids = std::move(ids)]() mutable {
    auto refs = store_.LookupHubApps(ids);
    Post([this, ids = std::move(ids), refs = std::move(refs)]() mutable {
      OnLookupDone(std::move(ids), std::move(refs));
    });
  });
}

void Sink::OnLookupDone(std::vector<std::string> ids,
                        absl::StatusOr<std::vector<store::HubAppRef>> refs) {
  lookup_.in_flight = false;
  if (!refs.ok()) {
    metrics_.StoreError("lookup");
    lookup_.retry_at = clock_.MonotonicNow() + RetryDelay(lookup_.failures++);
    Log().Warn("cannot look up hub applications; retrying",
               {{"error", refs.status().ToString()}, {"ids", static_cast<int64_t>(ids.size())}});
    return;
  }
  lookup_.failures = 0;
  for (auto& ref : *refs) {
    std::string id = ref.resource_id;
    lookup_.refs.insert_or_assign(std::move(id), std::move(ref));
  }
  for (const auto& id : ids) {
    auto node = lookup_.awaiting.extract(id);
    if (node.empty()) {
      continue;
    }
    lookup_.awaiting_count -= node.mapped().size();
    auto ref = lookup_.refs.find(id);
    for (auto& item : node.mapped()) {
      if (ref == lookup_.refs.end()) {
        metrics_.Dropped(DropReason::kUnknownResource);
        warnings_.unknown_resource.Add(item.report.event_id, {{"resource", id},
                                                              {"cluster", item.report.cluster},
                                                              {"event_id", item.report.event_id}});
        std::move(item.ack)();
        continue;
      }
      Admit(ref->second, std::move(item));
    }
  }
  StartLookup();
}

}  // namespace mmi::status_sink
