#include "services/dispatcher/apps/outbox.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "libs/cloudevents/json_format.h"
#include "libs/common/log.h"

namespace mmi::dispatcher {
namespace {

const log::Logger& Log() {
  static const log::Logger logger("dispatcher.outbox");
  return logger;
}

constexpr std::chrono::seconds kFailureLogInterval{30};

}  // namespace

Outbox::Outbox(Loop& loop, WorkerPool& workers, store::DispatchStore& store,
               transport::Publisher& publisher, const Clock& clock, DispatcherMetrics& metrics,
               OutboxSettings settings)
    : loop_(loop),
      workers_(workers),
      store_(store),
      publisher_(publisher),
      clock_(clock),
      metrics_(metrics),
      settings_(settings),
      recent_(settings.recent_window, settings.recent_capacity) {}

void Outbox::SetPublishedHook(PublishedHook hook) { hook_ = std::move(hook); }

void Outbox::Add(std::vector<store::OutboxEntry> entries) {
  std::vector<RecordedEvent> recorded;
  recorded.reserve(entries.size());
  for (auto& e : entries) {
    recorded.push_back({std::move(e), std::nullopt});
  }
  Add(std::move(recorded));
}

void Outbox::Add(std::vector<RecordedEvent> recorded) {
  const auto now = clock_.MonotonicNow();
  for (auto& r : recorded) {
    const int64_t seq = r.entry.seq;
    if (items_.contains(seq)) {
      continue;
    }
    auto& queue = by_resource_[r.entry.resource_id];
    queue.push_back(seq);
    const bool head = queue.size() == 1;
    if (!head && backing_off_.contains(r.entry.resource_id)) {
      ++held_;  // waits behind an event in retry backoff
    }
    if (r.event.has_value()) {
      std::string().swap(r.entry.event);  // one form in memory: the event, not its text too
    }
    items_.emplace(seq, Item{std::move(r.entry), std::move(r.event), now, 0});
    if (head) {
      ready_.push_back(seq);
    }
  }
  UpdateOutstanding();
  Pump();
}

void Outbox::Pump() {
  if (!ready_.empty() && !publisher_.connected()) {
    // Not connected yet (start-up) or reconnecting: wait instead of burning attempts.
    if (!pump_scheduled_) {
      pump_scheduled_ = true;
      loop_.PostAfter(settings_.reconnect_poll, [this] {
        pump_scheduled_ = false;
        Pump();
      });
    }
    return;
  }
  const size_t limit = std::min(settings_.max_in_flight, publisher_.max_in_flight());
  while (in_flight_ < limit && !ready_.empty()) {
    const int64_t seq = ready_.front();
    ready_.pop_front();
    PublishOne(seq);
  }
}

void Outbox::PublishOne(int64_t seq) {
  auto it = items_.find(seq);
  if (it == items_.end()) {
    return;
  }
  Item& item = it->second;
  if (!item.event.has_value()) {  // read back from the store
    absl::StatusOr<cloudevents::Event> event = cloudevents::DecodeStructuredJson(item.entry.event);
    if (!event.ok()) {
      OnResult(seq,
               absl::InvalidArgumentError(
                   absl::StrCat("stored event is not decodable: ", event.status().message())),
               clock_.MonotonicNow());
      return;
    }
    item.event = *std::move(event);
    std::string().swap(item.entry.event);
  }
  ++in_flight_;
  const auto started = clock_.MonotonicNow();
  // A copy: the item keeps its event for a retry or a resend with the other verb.
  publisher_.Publish(*item.event, [this, seq, started](absl::Status status) {
    loop_.Post([this, seq, started, status = std::move(status)]() mutable {
      --in_flight_;
      OnResult(seq, status, started);
      Pump();
    });
  });
}

void Outbox::OnResult(int64_t seq, const absl::Status& status,
                      std::chrono::steady_clock::time_point started) {
  auto it = items_.find(seq);
  if (it == items_.end()) {
    return;
  }
  Item& item = it->second;
  const std::string action(store::OutboxActionName(item.entry.action));
  if (status.ok()) {
    metrics_.Dispatch(action, "ok");
    if (failure_logged_at_.has_value()) {
      Log().Info("publishing again", {{"failures_not_logged", failures_not_logged_}});
      failure_logged_at_.reset();
      failures_not_logged_ = 0;
    }
    metrics_.PublishLatency(clock_.MonotonicNow() - item.added_at);
    if (Log().Enabled(log::Level::kDebug)) {  // the fields cost an encode each
      Log().Debug("published", {{"resource", item.entry.resource_id},
                                {"cluster", item.entry.cluster},
                                {"action", action},
                                {"version", item.entry.version}});
    }
    // The event (~2 KB) is done with: Finish() erases the item, and the hook is not given it.
    item.event.reset();
    item.entry.event.clear();
    const store::OutboxEntry entry = item.entry;
    recent_.Note(entry.cluster, entry.resource_id, clock_.MonotonicNow());
    marks_.push_back(seq);
    Finish(seq);
    if (hook_) {
      hook_(entry);
    }
    FlushMarks();
    return;
  }
  if (absl::IsNotFound(status) && item.entry.action == store::OutboxAction::kDelete) {
    // Maestro does not know the resource (any more): nothing left to delete.
    OnResult(seq, absl::OkStatus(), started);
    return;
  }
  if (ResendWithOtherVerb(seq, item, status)) {
    return;
  }
  if (status.code() == absl::StatusCode::kInvalidArgument) {
    // Can never be sent: count, log and drop it so the resource's later events can go.
    metrics_.Dispatch(action, "dropped");
    Log().Error("dropping an event the transport can never send",
                {{"resource", item.entry.resource_id},
                 {"cluster", item.entry.cluster},
                 {"action", action},
                 {"error", std::string(status.message())}});
    marks_.push_back(seq);
    Finish(seq);
    FlushMarks();
    return;
  }
  metrics_.Dispatch(action, "retry");
  ++item.attempts;
  const auto delay = RetryDelay(item.attempts);
  if (const auto now = clock_.MonotonicNow();
      !failure_logged_at_.has_value() || now - *failure_logged_at_ >= kFailureLogInterval) {
    Log().Warn("publish failed; will retry", {{"resource", item.entry.resource_id},
                                              {"cluster", item.entry.cluster},
                                              {"attempt", item.attempts},
                                              {"delay_ms", static_cast<int64_t>(delay.count())},
                                              {"failures_not_logged", failures_not_logged_},
                                              {"error", std::string(status.message())}});
    failure_logged_at_ = now;
    failures_not_logged_ = 0;
  } else {
    ++failures_not_logged_;
  }
  workers_.Post([this, seq, error = std::string(status.message())] {
    if (absl::Status s = store_.RecordPublishFailure(seq, error); !s.ok()) {
      Log().Warn("could not count a publish failure", {{"error", std::string(s.message())}});
    }
  });
  Hold(item.entry.resource_id);
  UpdateOutstanding();
  loop_.PostAfter(delay, [this, seq, resource_id = item.entry.resource_id] {
    Release(resource_id);
    if (items_.contains(seq)) {
      ready_.push_back(seq);
    }
    UpdateOutstanding();
    Pump();
  });
}

bool Outbox::ResendWithOtherVerb(int64_t seq, Item& item, const absl::Status& status) {
  if (!((absl::IsAlreadyExists(status) && item.entry.action == store::OutboxAction::kCreate) ||
        (absl::IsNotFound(status) && item.entry.action == store::OutboxAction::kUpdate))) {
    return false;
  }
  // Maestro already has the resource (e.g. created by the Go controller before us), or lost
  // it: send the same payload with the other verb (maestro-protocol §6.1, §7.4).
  const std::string action(store::OutboxActionName(item.entry.action));
  const bool to_update = item.entry.action == store::OutboxAction::kCreate;
  if (!item.event.has_value()) {  // it was published, so PublishOne decoded it
    return false;
  }
  item.event->type = std::string(to_update ? cloudevents::kSpecUpdateRequestType
                                           : cloudevents::kSpecCreateRequestType);
  metrics_.Dispatch(action, to_update ? "converted_to_update" : "converted_to_create");
  Log().Info("resending with the other verb", {{"resource", item.entry.resource_id},
                                               {"cluster", item.entry.cluster},
                                               {"as", to_update ? "update" : "create"},
                                               {"reason", std::string(status.message())}});
  item.entry.action = to_update ? store::OutboxAction::kUpdate : store::OutboxAction::kCreate;
  ready_.push_front(seq);
  return true;
}

void Outbox::Finish(int64_t seq) {
  auto it = items_.find(seq);
  if (it == items_.end()) {
    return;
  }
  const std::string resource_id = it->second.entry.resource_id;
  items_.erase(it);
  Release(resource_id);  // only a head not in backoff finishes: keeps held_ right regardless
  auto rit = by_resource_.find(resource_id);
  if (rit != by_resource_.end()) {
    auto& queue = rit->second;
    if (!queue.empty() && queue.front() == seq) {
      queue.pop_front();
    } else {
      queue.erase(std::remove(queue.begin(), queue.end(), seq), queue.end());
    }
    if (queue.empty()) {
      by_resource_.erase(rit);
    } else {
      ready_.push_back(queue.front());
    }
  }
  UpdateOutstanding();
}

void Outbox::FlushMarks() {
  if (marks_in_flight_ == 0 && !marks_.empty() && marks_.size() < settings_.mark_batch &&
      settings_.mark_linger.count() > 0) {
    // Let more acceptances join this batch: one statement and commit for many.
    if (!mark_timer_) {
      mark_timer_ = true;
      loop_.PostAfter(settings_.mark_linger, [this] {
        mark_timer_ = false;
        SendMarks();
      });
    }
    UpdateOutstanding();
    return;
  }
  SendMarks();
}

void Outbox::SendMarks() {
  if (marks_in_flight_ > 0 || marks_.empty()) {
    UpdateOutstanding();
    return;
  }
  const size_t n = std::min(marks_.size(), settings_.mark_batch);
  std::vector<int64_t> batch(marks_.begin(), marks_.begin() + static_cast<std::ptrdiff_t>(n));
  marks_.erase(marks_.begin(), marks_.begin() + static_cast<std::ptrdiff_t>(n));
  marks_in_flight_ = batch.size();
  UpdateOutstanding();
  workers_.Post([this, batch = std::move(batch)]() mutable {
    absl::Status status = store_.MarkPublished(batch, clock_.Now());
    loop_.Post([this, batch = std::move(batch), status = std::move(status)]() mutable {
      marks_in_flight_ = 0;
      if (!status.ok()) {
        Log().Warn("could not remove published events from the outbox; retrying",
                   {{"count", static_cast<int64_t>(batch.size())},
                    {"error", std::string(status.message())}});
        marks_.insert(marks_.begin(), batch.begin(), batch.end());
        UpdateOutstanding();
        loop_.PostAfter(RetryDelay(1), [this] { FlushMarks(); });
        return;
      }
      FlushMarks();
    });
  });
}

void Outbox::UpdateOutstanding() {
  const size_t ready_or_in_flight = items_.size() - std::min(held_, items_.size());
  {
    absl::MutexLock lock(&drain_mu_);
    outstanding_ = items_.size() + marks_.size() + marks_in_flight_;
    ready_or_in_flight_ = ready_or_in_flight;
  }
  metrics_.outbox_pending().Set(static_cast<double>(items_.size()));
  if (drained_hook_ && ready_or_in_flight <= drained_low_water_) {
    std::function<void()> drained = std::move(drained_hook_);
    drained_hook_ = nullptr;
    loop_.Post(std::move(drained));  // not from inside the outbox's own bookkeeping
  }
}

void Outbox::Hold(const std::string& resource_id) {
  if (!backing_off_.insert(resource_id).second) {
    return;
  }
  if (auto it = by_resource_.find(resource_id); it != by_resource_.end()) {
    held_ += it->second.size();
  }
}

void Outbox::Release(const std::string& resource_id) {
  if (backing_off_.erase(resource_id) == 0) {
    return;
  }
  if (auto it = by_resource_.find(resource_id); it != by_resource_.end()) {
    held_ -= std::min(held_, it->second.size());
  }
}

void Outbox::NotifyWhenDrainedTo(size_t low_water, std::function<void()> drained) {
  drained_hook_ = std::move(drained);
  drained_low_water_ = low_water;
  UpdateOutstanding();
}

size_t Outbox::pending() const {
  absl::MutexLock lock(&drain_mu_);
  return outstanding_;
}

size_t Outbox::ready_or_in_flight() const {
  absl::MutexLock lock(&drain_mu_);
  return ready_or_in_flight_;
}

bool Outbox::WaitDrained(std::chrono::milliseconds timeout) {
  absl::MutexLock lock(&drain_mu_);
  const auto drained = [this]()
                           ABSL_EXCLUSIVE_LOCKS_REQUIRED(drain_mu_) { return outstanding_ == 0; };
  return drain_mu_.AwaitWithTimeout(absl::Condition(&drained), absl::FromChrono(timeout));
}

std::chrono::milliseconds Outbox::RetryDelay(int attempts) {
  const double base = static_cast<double>(settings_.retry.initial.count()) *
                      std::pow(settings_.retry.multiplier, std::max(0, attempts - 1));
  const double capped = std::min(base, static_cast<double>(settings_.retry.max.count()));
  std::uniform_real_distribution<double> jitter(1.0 - settings_.retry.jitter,
                                                1.0 + settings_.retry.jitter);
  return std::chrono::milliseconds(static_cast<int64_t>(capped * jitter(rng_)));
}

}  // namespace mmi::dispatcher
