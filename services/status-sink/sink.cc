#include "services/status-sink/sink.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/time/time.h"
#include "libs/cloudevents/manifest_bundle.h"
#include "libs/cloudevents/object_meta.h"
#include "libs/cloudevents/resource_id.h"
#include "libs/cloudevents/resync.h"
#include "libs/cloudevents/sequence_id.h"
#include "libs/cloudevents/status_hash.h"
#include "libs/transport/metrics.h"
#include "libs/transport/status_resync.h"

namespace mmi::status_sink {
namespace {

const log::Logger& Log() {
  static const log::Logger logger("status_sink");
  return logger;
}

// ManifestWork annotations the dispatcher sets (hub-apis.md §5.1).
constexpr std::string_view kHubAppNamespaceAnnotation =
    "apps.open-cluster-management.io/hub-application-namespace";
constexpr std::string_view kHubAppNameAnnotation =
    "apps.open-cluster-management.io/hub-application-name";

// How often LogDrops may write its summary line.
constexpr std::chrono::seconds kDropLogInterval{30};
// How often RequestLostResync counts sheddable writes (a walk over them) while there is no room.
constexpr std::chrono::seconds kLostRoomRecheck{1};

}  // namespace

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
      coalescer_(settings_.coalescer, clock) {}

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
        if (intake_closed_.load()) {
          // Stopping: left unacknowledged, so Kafka redelivers it and MQTT/gRPC recover it
          // through the status resync of the next start.
          return;
        }
        if (intake_depth_.load() >= settings_.intake_capacity) {
          // Back-pressure: drop now, recover through a status resync once the loop caught up.
          metrics_.Dropped(DropReason::kQueueFull);
          ResyncAfterLoss();
          std::move(ack)();
          return;
        }
        ++intake_depth_;
        Post([this, event = std::move(event), ack = std::move(ack)]() mutable {
          --intake_depth_;
          HandleEvent(std::move(event), std::move(ack));
        });
      },
      [this](bool resubscribed) {
        // Events may have been missed while we were away (or down): ask for what changed.
        ++resync_asks_;
        resync_wanted_.store(true);
        Post([this, resubscribed] {
          Log().Info("status subscription active", {{"resubscribed", resubscribed}});
        });
      });
}

absl::Status Sink::Start() {
  if (started_.exchange(true)) {
    return absl::FailedPreconditionError("status sink already started");
  }
  threaded_.store(true);
  loop_.Start();
  ScheduleTick();
  return Subscribe();
}

absl::Status Sink::StartWithoutThreadForTest() {
  started_.store(true);
  return Subscribe();
}

void Sink::Stop(std::chrono::milliseconds drain) {
  if (!started_.load() || stopped_.exchange(true)) {
    return;
  }
  intake_closed_.store(true);
  if (!threaded_.load()) {
    subscriber_.Stop();
    return;
  }
  Post([this] {
    draining_ = true;
    FlushPersist(/*force=*/true);
  });
  {
    absl::MutexLock lock(&drain_mu_);
    if (!drain_mu_.AwaitWithTimeout(absl::Condition(&drained_), absl::FromChrono(drain))) {
      Log().Warn("stopping before every pending status was written",
                 {{"drain_ms", static_cast<int64_t>(drain.count())}});
    }
  }
  abandoned_.store(true);
  loop_.Stop();
  // Only now: acknowledgements of what was drained must still reach the transport.
  subscriber_.Stop();
}

void Sink::Post(Task task) {
  loop_.Post([this, task = std::move(task)]() mutable {
    if (abandoned_.load()) {
      return;  // Stop()'s drain period is over: dropped unrun
    }
    std::move(task)();
    NoteDrained();
  });
}

void Sink::ScheduleTick() {
  loop_.PostAfter(settings_.tick, [this] {
    if (abandoned_.load()) {
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
  if (draining_ && Idle()) {
    absl::MutexLock lock(&drain_mu_);
    drained_ = true;
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
  return intake_depth_.load() == 0 && awaiting_.empty() && coalescer_.pending() == 0 &&
         coalescer_.in_flight() == 0 && to_persist_.empty() && !persist_in_flight_;
}

void Sink::Tick() {
  const auto now = clock_.MonotonicNow();
  last_tick_ = now;
  if (resync_wanted_.load() && !draining_) {
    if (now < next_resync_at_) {
      DeferResync(now);
    } else if (!resync_in_flight_ && now >= resync_retry_at_ &&
               intake_depth_.load() <= settings_.intake_capacity / 2) {
      RequestResync();
    }
  } else if (!lost_.empty() && !draining_ && !resync_in_flight_ && now >= next_resync_at_ &&
             now >= resync_retry_at_ && intake_depth_.load() <= settings_.intake_capacity / 2) {
    RequestLostResync(now);
  }
  ExpireLostAsks(now);
  StartLookup();
  Pump();
  FlushPersist(draining_);
  if (!counts_in_flight_ && now >= next_counts_at_ && !draining_) {
    RefreshCounts();
  }
  LogDrops(now);
  UpdateQueueGauges();
}

void Sink::LogDrops(std::chrono::steady_clock::time_point now) {
  warnings_.Flush();
  if ((shed_unlogged_ == 0 && overflow_unlogged_ == 0 && lost_resync_failed_unlogged_ == 0 &&
       lost_given_up_unlogged_ == 0) ||
      now < next_drop_log_at_) {
    return;
  }
  next_drop_log_at_ = now + kDropLogInterval;
  if (lost_given_up_unlogged_ > 0) {
    Log().Warn(
        "lost reports asked for by every allowed status resync got no answer; given up until the "
        "next report of each or the next full status resync",
        {{"resources", lost_given_up_unlogged_}, {"asks", settings_.lost_asks}});
    lost_given_up_unlogged_ = 0;
  }
  if (lost_resync_failed_unlogged_ > 0) {
    Log().Warn(
        "cannot publish status resync requests for lost reports; their resources are asked for "
        "again in a later round",
        {{"failed_requests", lost_resync_failed_unlogged_},
         {"last_error", lost_resync_last_error_}});
    lost_resync_failed_unlogged_ = 0;
  }
  if (shed_unlogged_ == 0 && overflow_unlogged_ == 0) {
    return;
  }
  Log().Warn(
      "status reports dropped for want of room: volatile-only writes shed, the rest overflowed "
      "(remembered and asked for again by status resync)",
      {{"volatile_shed", shed_unlogged_},
       {"overflowed", overflow_unlogged_},
       {"lost_pending", static_cast<uint64_t>(lost_.size())},
       {"pending", static_cast<uint64_t>(coalescer_.pending())},
       {"max_pending", static_cast<uint64_t>(settings_.coalescer.max_pending)}});
  shed_unlogged_ = 0;
  overflow_unlogged_ = 0;
}

void Sink::UpdateQueueGauges() {
  metrics_.QueueDepth(Queue::kIntake, static_cast<double>(intake_depth_.load()));
  metrics_.QueueDepth(Queue::kLookup, static_cast<double>(awaiting_count_));
  metrics_.QueueDepth(Queue::kPending, static_cast<double>(coalescer_.pending()));
  metrics_.QueueDepth(Queue::kInFlight, static_cast<double>(coalescer_.in_flight()));
  metrics_.QueueDepth(Queue::kPersist, static_cast<double>(to_persist_.size()));
  metrics_.QueueDepth(Queue::kLost, static_cast<double>(lost_.size()));
  metrics_.QueueDepth(Queue::kLostAsked, static_cast<double>(lost_asked_.size()));
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
  const auto drop = [&](DropReason reason, std::string_view why) {
    metrics_.Dropped(reason);
    if (reason == DropReason::kMalformed) {
      warnings_.malformed.Add(event.id,
                              {{"event_id", event.id}, {"source", event.source}, {"error", why}});
    } else {
      Log().Debug("dropping a status event",
                  {{"event_id", event.id}, {"reason", DropReasonName(reason)}, {"detail", why}});
    }
    std::move(ack)();
  };
  if (transport::ClassifyReceived(event) != transport::ReceivedKind::kStatus) {
    drop(DropReason::kNotStatus, event.type);
    return;
  }
  Awaiting item;
  item.event_id = event.id;
  auto id = event.ResourceId();
  if (!id.ok()) {
    drop(DropReason::kMalformed, std::string(id.status().message()));
    return;
  }
  item.update.resource_id = absl::AsciiStrToLower(*id);
  if (event.HasExtension(cloudevents::kExtSequenceId)) {
    auto text = event.SequenceId();
    absl::StatusOr<cloudevents::SequenceId> seq =
        text.ok() ? cloudevents::SequenceId::Parse(*text) : text.status();
    if (!seq.ok()) {
      drop(DropReason::kMalformed, std::string(seq.status().message()));
      return;
    }
    item.update.sequence_id = seq->Value();
  }
  auto payload = cloudevents::ManifestBundleStatusOf(event);
  if (!payload.ok()) {
    drop(DropReason::kMalformed, std::string(payload.status().message()));
    return;
  }
  auto hash = event.StatusHash();
  if (hash.ok() && !hash->empty()) {
    item.update.status_hash = *hash;
  } else {
    auto computed = cloudevents::StatusHash(*payload);
    if (!computed.ok()) {
      drop(DropReason::kMalformed, std::string(computed.status().message()));
      return;
    }
    item.update.status_hash = *computed;
  }
  item.update.deleted = cloudevents::IsDeleted(*payload);
  if (!item.update.deleted) {
    auto feedback = FeedbackStatus(*payload);
    if (!feedback.ok()) {
      drop(DropReason::kMalformed, std::string(feedback.status().message()));
      return;
    }
    if (!feedback->has_value()) {
      drop(DropReason::kNoFeedback, "no status feedback yet");
      return;
    }
    item.update.status = std::move(**feedback);
  }
  if (event.time) {
    item.update.event_time = std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(
            event.time->time_since_epoch()));
  }
  auto cluster = event.ClusterName();
  if (cluster.ok()) {
    item.cluster = *cluster;
  }
  if (event.HasExtension(cloudevents::kExtMetadata)) {
    auto meta = cloudevents::ObjectMetaOf(event);
    if (meta.ok()) {
      auto ns = meta->annotations.find(std::string(kHubAppNamespaceAnnotation));
      auto name = meta->annotations.find(std::string(kHubAppNameAnnotation));
      if (ns != meta->annotations.end() && name != meta->annotations.end()) {
        item.metadata_app = ns->second + "/" + name->second;
      }
    }
  }
  item.ack = std::move(ack);

  auto ref = refs_.find(item.update.resource_id);
  if (ref != refs_.end()) {
    Admit(ref->second, std::move(item));
    return;
  }
  if (awaiting_count_ >= settings_.max_awaiting_lookup) {
    metrics_.Dropped(DropReason::kOverflow);
    ++overflow_unlogged_;
    RememberLost(item.update.resource_id, item.cluster);
    std::move(item.ack)();
    return;
  }
  const std::string key = item.update.resource_id;
  awaiting_[key].push_back(std::move(item));
  ++awaiting_count_;
  StartLookup();
}

void Sink::Admit(const store::HubAppRef& ref, Awaiting item) {
  if (!item.cluster.empty() && item.cluster != ref.cluster) {
    // A cluster may only report the resources dispatched to it.
    metrics_.Dropped(DropReason::kClusterMismatch);
    warnings_.wrong_cluster.Add(item.event_id, {{"resource", ref.resource_id},
                                                {"cluster", item.cluster},
                                                {"expected_cluster", ref.cluster},
                                                {"event_id", item.event_id}});
    std::move(item.ack)();
    return;
  }
  if (!item.metadata_app.empty() && item.metadata_app != ref.hub_namespace + "/" + ref.hub_name) {
    warnings_.other_application.Add(item.event_id,
                                    {{"resource", ref.resource_id},
                                     {"metadata_application", item.metadata_app},
                                     {"application", ref.hub_namespace + "/" + ref.hub_name}});
  }
  auto outcome = coalescer_.Offer(std::move(item.update), std::move(item.ack));
  if (outcome.result != OfferResult::kStale) {
    // A newer report of it arrived (an overflow is remembered as lost again below).
    ForgetLostAsk(ref.resource_id);
    if (!lost_.empty() && outcome.result != OfferResult::kOverflow) {
      lost_.erase(ref.resource_id);  // nothing left to recover
    }
  }
  Release(outcome.release);
  for (int i = 0; i < outcome.shed; ++i) {
    metrics_.Dropped(DropReason::kVolatileShed);
  }
  shed_unlogged_ += static_cast<uint64_t>(outcome.shed);
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
      ++overflow_unlogged_;
      RememberLost(ref.resource_id, ref.cluster);
      break;
  }
  Pump();
}

void Sink::StartLookup() {
  if (lookup_in_flight_ || awaiting_.empty() || clock_.MonotonicNow() < lookup_retry_at_) {
    return;
  }
  std::vector<std::string> ids;
  for (const auto& [id, items] : awaiting_) {
    if (ids.size() >= settings_.lookup_batch) {
      break;
    }
    ids.push_back(id);
  }
  lookup_in_flight_ = true;
  store_executor_.Post([this, ids = std::move(ids)]() mutable {
    auto refs = store_.LookupHubApps(ids);
    Post([this, ids = std::move(ids), refs = std::move(refs)]() mutable {
      OnLookupDone(std::move(ids), std::move(refs));
    });
  });
}

void Sink::OnLookupDone(std::vector<std::string> ids,
                        absl::StatusOr<std::vector<store::HubAppRef>> refs) {
  lookup_in_flight_ = false;
  if (!refs.ok()) {
    metrics_.StoreError("lookup");
    lookup_retry_at_ = clock_.MonotonicNow() + RetryDelay(lookup_failures_++);
    Log().Warn("cannot look up hub applications; retrying",
               {{"error", refs.status().ToString()}, {"ids", static_cast<int64_t>(ids.size())}});
    return;
  }
  lookup_failures_ = 0;
  for (auto& ref : *refs) {
    std::string id = ref.resource_id;
    refs_.insert_or_assign(std::move(id), std::move(ref));
  }
  for (const auto& id : ids) {
    auto node = awaiting_.extract(id);
    if (node.empty()) {
      continue;
    }
    awaiting_count_ -= node.mapped().size();
    auto ref = refs_.find(id);
    for (auto& item : node.mapped()) {
      if (ref == refs_.end()) {
        metrics_.Dropped(DropReason::kUnknownResource);
        warnings_.unknown_resource.Add(
            item.event_id,
            {{"resource", id}, {"cluster", item.cluster}, {"event_id", item.event_id}});
        std::move(item.ack)();
        continue;
      }
      Admit(ref->second, std::move(item));
    }
  }
  StartLookup();
}

// --- writes ---------------------------------------------------------------------------------

void Sink::Pump() {
  const std::size_t in_flight = coalescer_.in_flight();
  if (in_flight >= settings_.max_in_flight) {
    return;
  }
  auto ready = coalescer_.TakeReady(settings_.max_in_flight - in_flight);
  Release(ready.release);
  for (int i = 0; i < ready.unchanged; ++i) {
    metrics_.Dropped(DropReason::kUnchanged);
  }
  for (auto& task : ready.tasks) {
    Dispatch(std::move(task));
  }
}

void Sink::Dispatch(WriteTask task) {
  auto ref = refs_.find(task.update.resource_id);
  if (ref == refs_.end()) {
    coalescer_.Dropped(task);
    Release(task.acks);
    return;
  }
  if (task.kind == TaskKind::kConfirmDeletion) {
    store_executor_.Post([this, task = std::move(task)]() mutable {
      absl::StatusOr<bool> confirmed = store_.MarkDeletionConfirmed(task.update.resource_id);
      Post([this, task = std::move(task), confirmed = std::move(confirmed)]() mutable {
        OnDeletionDone(std::move(task), std::move(confirmed));
      });
    });
    return;
  }
  auto patch = BuildStatusPatch(task.update.status, settings_.patch, clock_.Now());
  if (!patch.ok()) {
    metrics_.Write(WriteResult::kInvalid, {});
    warnings_.bad_patch.Add(
        task.update.resource_id,
        {{"resource", task.update.resource_id},
         {"application", ref->second.hub_namespace + "/" + ref->second.hub_name},
         {"error", patch.status().ToString()}});
    coalescer_.Dropped(task);
    Release(task.acks);
    return;
  }
  // Decided here, with no write of this resource in flight, so the last written health is
  // what the hub shows. A volatile-only write changes no health: no transition to show.
  const bool progressing_first =
      !task.volatile_only &&
      NeedsProgressingFirst(task.update.status,
                            coalescer_.WrittenHealth(task.update.resource_id)) &&
      WantsProgressingFirst(settings_.progressing_before_healthy, rolling_sync_,
                            ref->second.appset_namespace, ref->second.appset_name);
  WriteDone done = [this, task = std::move(task)](WriteOutcome outcome) mutable {
    Post([this, task = std::move(task), outcome = std::move(outcome)]() mutable {
      OnWriteDone(std::move(task), std::move(outcome));
    });
  };
  if (progressing_first) {
    writer_.WriteProgressingFirst(ref->second.hub_namespace, ref->second.hub_name,
                                  *std::move(patch), std::move(done));
  } else {
    writer_.Write(ref->second.hub_namespace, ref->second.hub_name, *std::move(patch),
                  std::move(done));
  }
}

void Sink::OnWriteDone(WriteTask task, WriteOutcome outcome) {
  const auto ref = refs_.find(task.update.resource_id);
  const std::string app =
      ref == refs_.end() ? "" : ref->second.hub_namespace + "/" + ref->second.hub_name;
  if (outcome.progressing_written && outcome.result != WriteResult::kOk) {
    // The hub shows Progressing now: a retry of the Healthy write needs no second one.
    coalescer_.HealthWritten(task.update.resource_id, kHealthProgressing);
  }
  switch (outcome.result) {
    case WriteResult::kOk: {
      store::AppliedStatus row = coalescer_.Written(task);
      if (ref != refs_.end()) {
        row.appset_namespace = ref->second.appset_namespace;
        row.appset_name = ref->second.appset_name;
      }
      if (task.update.event_time) {
        metrics_.Lag(clock_.Now() - *task.update.event_time, task.volatile_only);
      }
      Log().Debug("hub status written", {{"resource", task.update.resource_id},
                                         {"application", app},
                                         {"volatile_only", task.volatile_only}});
      if (to_persist_.empty()) {
        persist_first_at_ = clock_.MonotonicNow();
      }
      to_persist_.push_back(Persist{std::move(row), std::move(task.acks)});
      break;
    }
    case WriteResult::kNotFound:
      warnings_.app_not_found.Add(task.update.resource_id,
                                  {{"resource", task.update.resource_id}, {"application", app}});
      coalescer_.Dropped(task);
      Release(task.acks);
      break;
    case WriteResult::kInvalid:
      warnings_.patch_refused.Add(task.update.resource_id, {{"resource", task.update.resource_id},
                                                            {"application", app},
                                                            {"error", outcome.status.ToString()}});
      coalescer_.Dropped(task);
      Release(task.acks);
      break;
    case WriteResult::kRetry: {
      const auto delay = RetryDelay(task.attempts);
      Log().Debug("hub status write failed; retrying",
                  {{"resource", task.update.resource_id},
                   {"error", outcome.status.ToString()},
                   {"delay_ms", static_cast<int64_t>(delay.count())}});
      coalescer_.Requeue(std::move(task), delay);
      break;
    }
  }
  FlushPersist(draining_);
  Pump();
}

void Sink::OnDeletionDone(WriteTask task, absl::StatusOr<bool> confirmed) {
  if (!confirmed.ok()) {
    metrics_.StoreError("deletion");
    const auto delay = RetryDelay(task.attempts);
    Log().Warn("cannot record a confirmed deletion; retrying",
               {{"resource", task.update.resource_id}, {"error", confirmed.status().ToString()}});
    coalescer_.Requeue(std::move(task), delay);
    return;
  }
  if (!*confirmed) {
    // A late or redelivered Deleted report for a resource that is live again (re-created) or
    // was never asked to go: the store changed nothing, and the resource keeps its state here.
    metrics_.Dropped(DropReason::kDeletedWhileLive);
    const auto ref = refs_.find(task.update.resource_id);
    warnings_.deleted_while_live.Add(
        task.update.resource_id,
        {{"resource", task.update.resource_id},
         {"application", ref == refs_.end()
                             ? std::string()
                             : ref->second.hub_namespace + "/" + ref->second.hub_name}});
    coalescer_.Dropped(task);
    Release(task.acks);
    Pump();
    return;
  }
  metrics_.DeletionConfirmed();
  Log().Info("deletion confirmed by the agent; handed to the dispatcher",
             {{"resource", task.update.resource_id}});
  auto later = coalescer_.Forget(task.update.resource_id);
  refs_.erase(task.update.resource_id);
  Release(task.acks);
  Release(later);
  Pump();
}

// --- persistence ----------------------------------------------------------------------------

void Sink::FlushPersist(bool force) {
  if (persist_in_flight_ || to_persist_.empty()) {
    return;
  }
  const auto now = clock_.MonotonicNow();
  if (now < persist_retry_at_ && !force) {
    return;
  }
  if (!force && to_persist_.size() < settings_.persist_batch &&
      now - persist_first_at_ < settings_.persist_interval) {
    return;
  }
  std::vector<Persist> batch;
  while (!to_persist_.empty() && batch.size() < settings_.persist_batch) {
    batch.push_back(std::move(to_persist_.front()));
    to_persist_.pop_front();
  }
  persist_first_at_ = now;
  persist_in_flight_ = true;
  store_executor_.Post([this, batch = std::move(batch)]() mutable {
    std::vector<store::AppliedStatus> rows;
    rows.reserve(batch.size());
    for (const auto& p : batch) {
      rows.push_back(p.row);
    }
    absl::Status status = store_.SaveAppliedStatuses(rows);
    if (status.ok()) {
      for (auto& p : batch) {
        for (auto& ack : p.acks) {
          std::move(ack)();  // acks may run on any thread
        }
        p.acks.clear();
      }
    }
    Post([this, batch = std::move(batch), status = std::move(status)]() mutable {
      OnPersistDone(std::move(batch), std::move(status));
    });
  });
}

void Sink::OnPersistDone(std::vector<Persist> batch, absl::Status status) {
  persist_in_flight_ = false;
  if (!status.ok()) {
    metrics_.StoreError("save");
    Log().Warn("cannot save applied statuses; retrying",
               {{"error", status.ToString()}, {"rows", static_cast<int64_t>(batch.size())}});
    persist_retry_at_ = clock_.MonotonicNow() + RetryDelay(persist_failures_++);
    for (auto it = batch.rbegin(); it != batch.rend(); ++it) {
      to_persist_.push_front(std::move(*it));
    }
    return;
  }
  persist_failures_ = 0;
  FlushPersist(draining_);
}

// --- resync and fleet report ----------------------------------------------------------------

void Sink::ResyncAfterLoss() {
  if (!resync_wanted_.exchange(true)) {
    ++resync_asks_;
  }
}

void Sink::RememberLost(const std::string& resource_id, const std::string& cluster, int asks) {
  if (resource_id.empty() || cluster.empty() || lost_.size() >= settings_.max_lost) {
    ResyncAfterLoss();
    return;
  }
  lost_.insert_or_assign(resource_id, Lost{cluster, asks});
}

void Sink::ForgetLostAsk(const std::string& resource_id) {
  if (!lost_asked_.empty()) {
    lost_asked_.erase(resource_id);  // its entry in lost_ask_order_ is skipped when it expires
  }
}

void Sink::ExpireLostAsks(std::chrono::steady_clock::time_point now) {
  uint64_t again = 0;
  while (!lost_ask_order_.empty() && lost_ask_order_.front().first <= now) {
    auto [deadline, resource_id] = std::move(lost_ask_order_.front());
    lost_ask_order_.pop_front();
    auto it = lost_asked_.find(resource_id);
    if (it == lost_asked_.end() || it->second.deadline != deadline) {
      continue;  // answered, or asked again since
    }
    Lost lost = std::move(it->second.lost);
    lost_asked_.erase(it);
    if (++lost.asks >= settings_.lost_asks) {
      metrics_.LostUnanswered(/*given_up=*/true);
      ++lost_given_up_unlogged_;
      continue;
    }
    metrics_.LostUnanswered(/*given_up=*/false);
    ++again;
    RememberLost(resource_id, lost.cluster, lost.asks);
  }
  if (again > 0) {
    Log().Info("lost reports asked for got no answer in time; asking again",
               {{"resources", again},
                {"timeout_ms", static_cast<int64_t>(settings_.lost_answer_timeout.count())}});
  }
}

bool Sink::RequestLostResync(std::chrono::steady_clock::time_point now) {
  const std::size_t max_pending = settings_.coalescer.max_pending;
  const std::size_t busy = coalescer_.pending() + awaiting_count_;
  std::size_t room = busy >= max_pending ? 0 : max_pending - busy;
  // Half the room (rounded up) for the answers, the rest for what the agents report meanwhile;
  // no round of crumbs while much more is lost.
  const auto enough = [&](std::size_t budget) {
    return budget != 0 &&
           (budget >= lost_.size() || budget >= std::max<std::size_t>(1, max_pending / 8));
  };
  if (!enough(room - room / 2)) {
    // Waiting volatile-only writes are room too: an answer (a report the hub lacks) sheds one to
    // be admitted, as any report needing a slot does. Under Argo CD's refresh churn the pending
    // set stays full of them, and counting free slots alone never recovered anything lost.
    if (now < lost_room_check_at_) {
      return false;
    }
    lost_room_check_at_ = now + kLostRoomRecheck;
    room += coalescer_.Sheddable();
  }
  const std::size_t budget = room - room / 2;
  if (!enough(budget)) {
    return false;
  }
  next_resync_at_ = now + settings_.status_resync_min_interval;
  std::map<std::string, cloudevents::ResourceStatusHashList> per_cluster;
  std::size_t asked = 0;
  const auto deadline = now + settings_.lost_answer_timeout;
  for (auto it = lost_.begin(); it != lost_.end() && asked < budget; ++asked) {
    // The hash of the last report the sink holds (if any): the agent answers because its
    // current one differs - that is the report that was dropped, or a newer one.
    per_cluster[it->second.cluster].status_hashes.push_back(
        {it->first, coalescer_.LatestHash(it->first)});
    lost_asked_.insert_or_assign(it->first, LostAsk{std::move(it->second), deadline});
    lost_ask_order_.emplace_back(deadline, it->first);
    it = lost_.erase(it);
  }
  int requests = 0;
  for (auto& [cluster, list] : per_cluster) {
    const auto& all = list.status_hashes;
    for (std::size_t start = 0; start < all.size(); start += settings_.resync_chunk) {
      cloudevents::ResourceStatusHashList chunk;
      const std::size_t end = std::min(all.size(), start + settings_.resync_chunk);
      chunk.status_hashes.assign(all.begin() + static_cast<std::ptrdiff_t>(start),
                                 all.begin() + static_cast<std::ptrdiff_t>(end));
      auto event = transport::MakeStatusResyncRequest(
          settings_.source_id, cluster, chunk, cloudevents::NewUuidV4(),
          std::chrono::time_point_cast<std::chrono::nanoseconds>(clock_.Now()));
      if (!event.ok()) {
        // Cannot happen for ids the sink took from events; fall back to asking for everything.
        Log().Warn("cannot build a status resync request for lost reports",
                   {{"cluster", cluster}, {"error", event.status().ToString()}});
        ResyncAfterLoss();
        continue;
      }
      ++requests;
      publisher_.Publish(*std::move(event), [this, cluster = cluster,
                                             ids = std::move(chunk)](absl::Status status) mutable {
        metrics_.Resync(status.ok());
        if (status.ok()) {
          return;
        }
        Post(
            [this, cluster = std::move(cluster), ids = std::move(ids), status = std::move(status)] {
              for (const auto& entry : ids.status_hashes) {
                // Not asked after all: asked again in a later round, with the asks it had.
                auto asked = lost_asked_.find(entry.resource_id);
                if (asked == lost_asked_.end()) {
                  continue;  // a report of it arrived meanwhile
                }
                Lost lost = std::move(asked->second.lost);
                lost_asked_.erase(asked);
                RememberLost(entry.resource_id, lost.cluster, lost.asks);
              }
              resync_retry_at_ = clock_.MonotonicNow() + RetryDelay(resync_failures_++);
              // Summed by LogDrops: a round may fail for thousands of clusters at once.
              ++lost_resync_failed_unlogged_;
              lost_resync_last_error_ = cluster + ": " + status.ToString();
            });
      });
    }
  }
  resync_failures_ = 0;  // as after a full resync: a failed publish counts up again
  Log().Info("status resync of lost reports requested",
             {{"resources", static_cast<int64_t>(asked)},
              {"clusters", static_cast<int64_t>(per_cluster.size())},
              {"requests", requests},
              {"still_lost", static_cast<int64_t>(lost_.size())}});
  return true;
}

void Sink::DeferResync(std::chrono::steady_clock::time_point now) {
  // Stays wanted: sent by the first tick after next_resync_at_, so no ask is lost.
  if (const uint64_t asks = resync_asks_.exchange(0); asks > 0) {
    metrics_.ResyncSuppressed(static_cast<double>(asks));
  }
  if (!resync_deferral_logged_) {
    resync_deferral_logged_ = true;
    Log().Info(
        "status resync deferred: the previous one was less than statusResyncMinInterval ago",
        {{"wait_ms", static_cast<int64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                              next_resync_at_ - now)
                                              .count())}});
  }
}

void Sink::RequestResync() {
  resync_wanted_.store(false);
  resync_asks_.store(0);  // all served by this resync
  resync_deferral_logged_ = false;
  resync_in_flight_ = true;
  store_executor_.Post([this] {
    std::vector<store::ResyncEntry> entries;
    absl::Status status =
        store_.ForEachResyncEntry([&](const store::ResyncEntry& e) { entries.push_back(e); });
    absl::StatusOr<std::vector<store::ResyncEntry>> result =
        status.ok() ? absl::StatusOr<std::vector<store::ResyncEntry>>(std::move(entries))
                    : absl::StatusOr<std::vector<store::ResyncEntry>>(status);
    Post([this, result = std::move(result)]() mutable { OnResyncEntries(std::move(result)); });
  });
}

void Sink::OnResyncEntries(absl::StatusOr<std::vector<store::ResyncEntry>> entries) {
  resync_in_flight_ = false;
  const auto retry = [&](const absl::Status& status) {
    metrics_.Resync(false);
    resync_wanted_.store(true);
    resync_retry_at_ = clock_.MonotonicNow() + RetryDelay(resync_failures_++);
    Log().Warn("status resync request failed; retrying", {{"error", status.ToString()}});
  };
  if (!entries.ok()) {
    metrics_.StoreError("resync");
    retry(entries.status());
    return;
  }
  // The minimum interval runs from the last resync that publishes (a failed store read above is
  // retried with backoff only).
  next_resync_at_ = clock_.MonotonicNow() + settings_.status_resync_min_interval;
  // Everything is asked for: the lost resources too.
  lost_.clear();
  lost_asked_.clear();
  lost_ask_order_.clear();
  // Per cluster (MQTT routes a request to the cluster's topic), in chunks that fit a message.
  std::map<std::string, cloudevents::ResourceStatusHashList> per_cluster;
  for (const auto& e : *entries) {
    std::string hash = coalescer_.LatestHash(e.resource_id);
    if (hash.empty()) {
      hash = e.status_hash;
    }
    per_cluster[e.cluster].status_hashes.push_back({e.resource_id, std::move(hash)});
  }
  int requests = 0;
  for (auto& [cluster, list] : per_cluster) {
    const auto& all = list.status_hashes;
    for (std::size_t start = 0; start < all.size(); start += settings_.resync_chunk) {
      cloudevents::ResourceStatusHashList chunk;
      const std::size_t end = std::min(all.size(), start + settings_.resync_chunk);
      chunk.status_hashes.assign(all.begin() + static_cast<std::ptrdiff_t>(start),
                                 all.begin() + static_cast<std::ptrdiff_t>(end));
      auto event = transport::MakeStatusResyncRequest(
          settings_.source_id, cluster, chunk, cloudevents::NewUuidV4(),
          std::chrono::time_point_cast<std::chrono::nanoseconds>(clock_.Now()));
      if (!event.ok()) {
        retry(event.status());
        return;
      }
      ++requests;
      publisher_.Publish(*std::move(event), [this, cluster = cluster](absl::Status status) {
        metrics_.Resync(status.ok());
        if (!status.ok()) {
          Post([this, cluster, status = std::move(status)] {
            resync_wanted_.store(true);
            resync_retry_at_ = clock_.MonotonicNow() + RetryDelay(resync_failures_++);
            Log().Warn("cannot publish a status resync request; retrying",
                       {{"cluster", cluster}, {"error", status.ToString()}});
          });
        }
      });
    }
  }
  resync_failures_ = 0;
  Log().Info("status resync requested", {{"clusters", static_cast<int64_t>(per_cluster.size())},
                                         {"requests", requests},
                                         {"resources", static_cast<int64_t>(entries->size())}});
}

void Sink::RefreshCounts() {
  counts_in_flight_ = true;
  next_counts_at_ = clock_.MonotonicNow() + settings_.counts_interval;
  store_executor_.Post([this] {
    auto counts = store_.AppSetCounts();
    Post([this, counts = std::move(counts)]() mutable {
      counts_in_flight_ = false;
      if (!counts.ok()) {
        metrics_.StoreError("counts");
        Log().Warn("cannot read the fleet report counts", {{"error", counts.status().ToString()}});
        return;
      }
      metrics_.SetAppSetCounts(*counts);
    });
  });
}

}  // namespace mmi::status_sink
