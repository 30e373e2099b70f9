#include "libs/transport/testing/fake_subscriber.h"

#include <utility>

#include "libs/cloudevents/json_format.h"
#include "libs/transport/internal/intake.h"

namespace mmi::transport::testing {
namespace {

const log::Logger& Log() {
  static const log::Logger logger("transport.fake");
  return logger;
}

}  // namespace

FakeSubscriber::FakeSubscriber(cloudevents::CodecLimits limits)
    : own_registry_(std::make_unique<prometheus::Registry>()),
      metrics_(*own_registry_, "fake", ClientRole::kSubscriber),
      limits_(limits),
      intake_log_(Log(), RealClock::Instance()) {}

FakeSubscriber::FakeSubscriber(prometheus::Registry& registry, cloudevents::CodecLimits limits)
    : metrics_(registry, "fake", ClientRole::kSubscriber),
      limits_(limits),
      intake_log_(Log(), RealClock::Instance()) {}

absl::Status FakeSubscriber::Start(EventHandler handler, SubscribedHook on_subscribed) {
  if (!handler) {
    return absl::InvalidArgumentError("FakeSubscriber::Start: handler must be set");
  }
  absl::MutexLock deliver_lock(&deliver_mu_);
  {
    absl::MutexLock lock(&mu_);
    if (started_) {
      return absl::FailedPreconditionError("FakeSubscriber::Start called twice");
    }
    started_ = true;
    connected_ = true;
  }
  metrics_.SetConnected(true);
  handler_ = std::move(handler);
  on_subscribed_ = std::move(on_subscribed);
  if (on_subscribed_) {
    on_subscribed_(false);
  }
  return absl::OkStatus();
}

void FakeSubscriber::Stop() {
  absl::MutexLock deliver_lock(&deliver_mu_);
  absl::MutexLock lock(&mu_);
  stopped_ = true;
  connected_ = false;
  metrics_.SetConnected(false);
}

bool FakeSubscriber::connected() const {
  absl::MutexLock lock(&mu_);
  return connected_;
}

absl::StatusOr<int64_t> FakeSubscriber::Deliver(cloudevents::Event event) {
  absl::MutexLock deliver_lock(&deliver_mu_);
  return DeliverLocked(
      0, [&event]() -> absl::StatusOr<cloudevents::Event> { return std::move(event); });
}

absl::StatusOr<int64_t> FakeSubscriber::DeliverEncoded(std::string_view json) {
  absl::MutexLock deliver_lock(&deliver_mu_);
  return DeliverLocked(json.size(),
                       [&]() { return cloudevents::DecodeStructuredJson(json, limits_); });
}

absl::StatusOr<int64_t> FakeSubscriber::DeliverLocked(
    std::size_t wire_bytes, absl::FunctionRef<absl::StatusOr<cloudevents::Event>()> decode) {
  int64_t id = 0;
  {
    absl::MutexLock lock(&mu_);
    if (!started_ || stopped_) {
      return absl::FailedPreconditionError("FakeSubscriber: not started or stopped");
    }
    if (!connected_) {
      return absl::UnavailableError("FakeSubscriber: disconnected");
    }
    id = next_id_++;
  }
  // The record is created only for a decoded event; a rejected message's ack finds none.
  const internal::IntakeResult result = internal::Intake(
      wire_bytes, limits_.max_event_bytes,
      [&]() -> absl::StatusOr<cloudevents::Event> {
        absl::StatusOr<cloudevents::Event> event = decode();
        if (event.ok()) {
          absl::MutexLock lock(&mu_);
          records_[id] = Record{*event, false};
          ++delivered_;
        }
        return event;
      },
      metrics_, intake_log_, "fake", handler_, [this, id]() { Ack(id); });
  if (result == internal::IntakeResult::kRejected) {
    absl::MutexLock lock(&mu_);
    ++rejected_;
    return absl::InvalidArgumentError(
        "FakeSubscriber: message rejected as malformed or oversize (see "
        "mmi_transport_messages_rejected_total)");
  }
  return id;
}

int FakeSubscriber::RedeliverUnacked() {
  absl::MutexLock deliver_lock(&deliver_mu_);
  std::vector<cloudevents::Event> again;
  {
    absl::MutexLock lock(&mu_);
    for (auto it = records_.begin(); it != records_.end();) {
      if (!it->second.acked) {
        again.push_back(std::move(it->second.event));
        it = records_.erase(it);
      } else {
        ++it;
      }
    }
  }
  int n = 0;
  for (cloudevents::Event& event : again) {
    if (DeliverLocked(0, [&event]() -> absl::StatusOr<cloudevents::Event> {
          return std::move(event);
        }).ok()) {
      ++n;
    }
  }
  return n;
}

void FakeSubscriber::SimulateDisconnect() {
  absl::MutexLock deliver_lock(&deliver_mu_);
  absl::MutexLock lock(&mu_);
  connected_ = false;
  metrics_.SetConnected(false);
}

void FakeSubscriber::SimulateReconnect() {
  absl::MutexLock deliver_lock(&deliver_mu_);
  {
    absl::MutexLock lock(&mu_);
    if (!started_ || stopped_ || connected_) {
      return;
    }
    connected_ = true;
  }
  metrics_.SetConnected(true);
  metrics_.RecordReconnect();
  if (on_subscribed_) {
    on_subscribed_(true);
  }
}

void FakeSubscriber::Ack(int64_t id) {
  absl::MutexLock lock(&mu_);
  if (stopped_) {
    return;
  }
  auto it = records_.find(id);
  if (it == records_.end()) {
    return;
  }
  if (it->second.acked) {
    ++double_acks_;
  }
  it->second.acked = true;
}

bool FakeSubscriber::acked(int64_t delivery_id) const {
  absl::MutexLock lock(&mu_);
  auto it = records_.find(delivery_id);
  return it != records_.end() && it->second.acked;
}

std::vector<int64_t> FakeSubscriber::unacked() const {
  absl::MutexLock lock(&mu_);
  std::vector<int64_t> ids;
  for (const auto& [id, record] : records_) {
    if (!record.acked) {
      ids.push_back(id);
    }
  }
  return ids;
}

std::vector<cloudevents::Event> FakeSubscriber::unacked_events() const {
  absl::MutexLock lock(&mu_);
  std::vector<cloudevents::Event> events;
  for (const auto& [id, record] : records_) {
    if (!record.acked) {
      events.push_back(record.event);
    }
  }
  return events;
}

int FakeSubscriber::deliveries() const {
  absl::MutexLock lock(&mu_);
  return delivered_;
}

int FakeSubscriber::rejected() const {
  absl::MutexLock lock(&mu_);
  return rejected_;
}

int FakeSubscriber::double_acks() const {
  absl::MutexLock lock(&mu_);
  return double_acks_;
}

}  // namespace mmi::transport::testing
