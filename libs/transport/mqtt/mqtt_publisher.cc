#include "libs/transport/mqtt/mqtt_publisher.h"

#include <pthread.h>

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "libs/cloudevents/mqtt_codec.h"
#include "libs/transport/mqtt/internal/client_id.h"
#include "libs/transport/mqtt/paho_message.h"

namespace mmi::transport {
namespace {

const log::Logger& Log() {
  static const log::Logger logger("transport.mqtt");
  return logger;
}

void* ToContext(uint64_t id) { return reinterpret_cast<void*>(static_cast<uintptr_t>(id)); }
uint64_t FromContext(void* context) {
  return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(context));
}

// MQTT 5 PUBACK / client failure -> STYLE.md code.
absl::Status PublishFailure(const mqtt::token& token) {
  const int reason = static_cast<int>(token.get_reason_code());
  const std::string detail = absl::StrCat("MQTT publish failed: return code ",
                                          token.get_return_code(), ", reason code ", reason);
  switch (reason) {
    case mqtt::ReasonCode::QUOTA_EXCEEDED:
      return absl::ResourceExhaustedError(detail + " (quota exceeded)");
    case mqtt::ReasonCode::NOT_AUTHORIZED:
      return absl::PermissionDeniedError(detail + " (not authorized: check the broker ACL)");
    case mqtt::ReasonCode::TOPIC_NAME_INVALID:
    case mqtt::ReasonCode::PACKET_TOO_LARGE:
    case mqtt::ReasonCode::PAYLOAD_FORMAT_INVALID:
      return absl::InvalidArgumentError(detail + " (rejected by the broker)");
    default:
      return absl::UnavailableError(detail);
  }
}

}  // namespace

void MqttPublisher::DeliveryListener::on_success(const mqtt::token& token) {
  owner_->Complete(FromContext(token.get_user_context()), absl::OkStatus());
}

void MqttPublisher::DeliveryListener::on_failure(const mqtt::token& token) {
  owner_->Complete(FromContext(token.get_user_context()), PublishFailure(token));
}

MqttPublisher::MqttPublisher(MqttSettings settings, Clock& clock, prometheus::Registry& registry)
    : settings_(std::move(settings)),
      clock_(clock),
      metrics_(registry, "mqtt", ClientRole::kPublisher),
      topics_(settings_) {}

MqttPublisher::~MqttPublisher() { Stop(); }

absl::Status MqttPublisher::Start() {
  absl::WriterMutexLock lock(&lifecycle_mu_);
  if (started_ || stopped_) {
    return absl::FailedPreconditionError("MqttPublisher::Start called twice or after Stop");
  }
  if (absl::Status s = ValidateMqttSettings(settings_); !s.ok()) {
    return s;
  }
  connection_ = std::make_unique<internal::MqttConnection>(
      settings_, internal::MqttClientId(settings_, "pub"), metrics_, Log());
  internal::MqttConnection::Hooks hooks;
  // A restarted broker may announce another Receive Maximum: read it on every connect.
  hooks.on_connected = [this](bool /*reconnect*/) { UpdateWindow(); };
  hooks.on_lost = [this] {
    UpdateWindow();  // 0: nothing more goes to Paho until the next CONNACK
    FailAllInFlight(absl::UnavailableError(
        "MQTT connection lost before the broker acknowledged the event; it may or may not have "
        "been delivered: retry"));
  };
  hooks.on_tick = [this] {
    if (!UpdateWindow()) {
      // Accepted just as the connection dropped (after on_lost): fail now rather than at the
      // deadline.
      FailAllInFlight(absl::UnavailableError(
          absl::StrCat("MQTT broker ", settings_.broker_host, " is not connected; retry later")));
    }
    ExpireDeadlines();
  };
  if (absl::Status s = connection_->Start(std::move(hooks)); !s.ok()) {
    return s;
  }
  sender_ = std::thread([this] { SendLoop(); });
  pthread_setname_np(sender_.native_handle(), "mqtt-pub-send");
  started_ = true;
  Log().Info("MQTT publisher started",
             {{"summary", RedactedSummary(TransportSettings(settings_))}});
  return absl::OkStatus();
}

void MqttPublisher::Publish(cloudevents::Event event, PublishCallback done) {
  const auto started = clock_.MonotonicNow();
  absl::ReaderMutexLock lock(&lifecycle_mu_);
  if (!started_ || stopped_) {
    Reject(std::move(done),
           absl::FailedPreconditionError("MqttPublisher: Publish() before Start() or after Stop()"),
           started);
    return;
  }
  if (event.source != settings_.source_id) {
    Reject(
        std::move(done),
        absl::InvalidArgumentError(absl::StrCat("event ", event.id, " has source \"", event.source,
                                                "\" but this transport publishes "
                                                "as source id \"",
                                                settings_.source_id, "\"")),
        started);
    return;
  }
  absl::StatusOr<std::string> topic = topics_.PublishTopic(event);
  if (!topic.ok()) {
    Reject(std::move(done), topic.status(), started);
    return;
  }
  absl::StatusOr<cloudevents::MqttMessage> encoded =
      cloudevents::EncodeMqtt(event, cloudevents::MqttContentMode::kBinary, settings_.limits);
  if (!encoded.ok()) {
    Reject(std::move(done),
           absl::InvalidArgumentError(absl::StrCat("cannot encode event ", event.id, " for MQTT: ",
                                                   std::string(encoded.status().message()))),
           started);
    return;
  }
  if (!connection_->connected()) {
    Reject(std::move(done),
           absl::UnavailableError(absl::StrCat("MQTT broker ", settings_.broker_host,
                                               " is not connected; retry later")),
           started);
    return;
  }
  mqtt::message_ptr message = ToPahoMessage(*topic, settings_.pub_qos, *encoded);
  bool accepted = false;
  {
    absl::MutexLock inflight_lock(&inflight_mu_);
    if (inflight_.size() < static_cast<size_t>(internal::kMaxPendingPublishes)) {
      // The sender thread hands it to Paho, in id order, once the window has room.
      inflight_.emplace(next_id_++,
                        InFlight{std::move(done), started, started + settings_.publish_timeout,
                                 std::move(event.id), std::move(message)});
      metrics_.SetPublishHeld(held());
      accepted = true;
    }
  }
  if (!accepted) {
    Reject(std::move(done),
           absl::ResourceExhaustedError(absl::StrCat(
               "MQTT publisher: ", internal::kMaxPendingPublishes,
               " events already wait for the broker's PUBACK or for room in its in-flight "
               "window; retry later")),
           started);
  }
}

void MqttPublisher::SendLoop() {
  while (true) {
    uint64_t id = 0;
    mqtt::message_ptr message;
    {
      absl::MutexLock lock(&inflight_mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(inflight_mu_) {
        return sender_stopping_ || (handed_ < window_ && held() > 0);
      };
      inflight_mu_.Await(absl::Condition(&ready));
      if (sender_stopping_) {
        return;
      }
      auto it = inflight_.lower_bound(next_send_);  // the oldest held event: held() > 0
      id = it->first;
      message = std::move(it->second.message);
      next_send_ = id + 1;
      ++handed_;
      peak_handed_ = std::max(peak_handed_, handed_);
      metrics_.SetPublishHeld(held());
    }
    try {
      connection_->client().publish(std::move(message), ToContext(id), listener_);
    } catch (const mqtt::exception& e) {
      const std::string detail = absl::StrCat("MQTT publish failed: ", e.what());
      Complete(id, e.get_return_code() == MQTTASYNC_MAX_BUFFERED_MESSAGES
                       ? absl::ResourceExhaustedError(
                             detail + " (too many events waiting for a PUBACK; retry later)")
                       : absl::UnavailableError(detail));
    } catch (const std::exception& e) {
      Complete(id, absl::UnavailableError(absl::StrCat("MQTT publish failed: ", e.what())));
    }
  }
}

void MqttPublisher::Stop() {
  {
    absl::WriterMutexLock lock(&lifecycle_mu_);
    if (!internal::BeginPublisherStop(started_, stopped_, callbacks_)) {
      return;
    }
  }
  {
    // The sender still hands held events to Paho meanwhile.
    absl::MutexLock lock(&inflight_mu_);
    auto drained = [this]()
                       ABSL_EXCLUSIVE_LOCKS_REQUIRED(inflight_mu_) { return inflight_.empty(); };
    inflight_mu_.AwaitWithTimeout(absl::Condition(&drained),
                                  absl::FromChrono(std::min<std::chrono::milliseconds>(
                                      settings_.publish_timeout, std::chrono::seconds(10))));
    sender_stopping_ = true;
  }
  if (sender_.joinable()) {
    sender_.join();
  }
  FailAllInFlight(absl::UnavailableError(
      "MQTT publisher stopped before the broker acknowledged the event: retry"));
  connection_->Stop(std::chrono::milliseconds(1'000));
  callbacks_.Stop();
  Log().Info("MQTT publisher stopped");
}

bool MqttPublisher::connected() const { return connection_ != nullptr && connection_->connected(); }

size_t MqttPublisher::max_in_flight() const {
  return connection_ != nullptr ? connection_->receive_maximum() : Publisher::max_in_flight();
}

size_t MqttPublisher::PeakInFlightForTest() const {
  absl::MutexLock lock(&inflight_mu_);
  return peak_handed_;
}

void MqttPublisher::Complete(uint64_t id, absl::Status status) {
  InFlight entry;
  {
    absl::MutexLock lock(&inflight_mu_);
    auto it = inflight_.find(id);
    if (it == inflight_.end()) {
      return;  // already failed by a deadline, a connection loss or Stop()
    }
    entry = std::move(it->second);
    inflight_.erase(it);
    if (id < next_send_) {
      --handed_;  // frees a slot of the window: wakes the sender
    } else {
      metrics_.SetPublishHeld(held());
    }
  }
  if (entry.expired) {
    return;  // its caller heard of the deadline already; only its slot was still taken
  }
  Finish(std::move(entry), std::move(status));
}

void MqttPublisher::FailWhere(absl::FunctionRef<bool(const InFlight&)> selected,
                              absl::FunctionRef<absl::Status()> status, bool paho_still_holds) {
  std::vector<InFlight> failed;
  {
    // All at once: the sender must not hand Paho an event that is failing.
    absl::MutexLock lock(&inflight_mu_);
    for (auto it = inflight_.begin(); it != inflight_.end();) {
      if (it->second.expired || !selected(it->second)) {
        ++it;
        continue;
      }
      if (it->first < next_send_ && paho_still_holds) {
        // Failed for its caller, but Paho still waits for its PUBACK: the slot stays taken
        // until that comes or the connection drops, so Paho never holds more than the window.
        InFlight caller;
        caller.done = std::move(it->second.done);
        caller.started = it->second.started;
        caller.event_id = std::move(it->second.event_id);
        it->second.expired = true;
        failed.push_back(std::move(caller));
        ++it;
        continue;
      }
      if (it->first < next_send_) {
        --handed_;
      }
      failed.push_back(std::move(it->second));
      it = inflight_.erase(it);
    }
    if (failed.empty()) {
      return;
    }
    metrics_.SetPublishHeld(held());
  }
  const absl::Status error = status();
  for (InFlight& entry : failed) {
    Finish(std::move(entry), error);
  }
}

void MqttPublisher::Finish(InFlight entry, absl::Status status) {
  metrics_.RecordPublish(status, clock_.MonotonicNow() - entry.started);
  if (!status.ok()) {
    Log().Debug("publish failed",
                {{"event_id", entry.event_id}, {"error", std::string(status.message())}});
  }
  callbacks_.Post([done = std::move(entry.done), status = std::move(status)]() mutable {
    std::move(done)(std::move(status));
  });
}

void MqttPublisher::Reject(PublishCallback done, absl::Status status,
                           std::chrono::steady_clock::time_point started) {
  metrics_.RecordPublish(status, clock_.MonotonicNow() - started);
  callbacks_.Post([done = std::move(done), status = std::move(status)]() mutable {
    std::move(done)(std::move(status));
  });
}

void MqttPublisher::FailAllInFlight(const absl::Status& status) {
  {
    // Slots kept for expired events Paho held: the connection (and what Paho held) is gone.
    absl::MutexLock lock(&inflight_mu_);
    for (auto it = inflight_.begin(); it != inflight_.end();) {
      if (!it->second.expired) {
        ++it;
        continue;
      }
      --handed_;  // expired entries are always handed ones
      it = inflight_.erase(it);
    }
  }
  FailWhere([](const InFlight&) { return true; }, [&status] { return status; },
            /*paho_still_holds=*/false);
}

bool MqttPublisher::UpdateWindow() {
  const bool connected = connection_->connected();
  // QoS 0 has no PUBACK, and Paho C does not count it against Receive Maximum.
  const size_t window = !connected               ? 0
                        : settings_.pub_qos == 0 ? internal::kMaxPendingPublishes
                                                 : connection_->receive_maximum();
  absl::MutexLock lock(&inflight_mu_);
  window_ = window;
  return connected;
}

void MqttPublisher::ExpireDeadlines() {
  const auto now = clock_.MonotonicNow();
  FailWhere([now](const InFlight& entry) { return entry.deadline <= now; },
            [this] {
              return absl::DeadlineExceededError(absl::StrCat(
                  "no PUBACK from MQTT broker ", settings_.broker_host, " within ",
                  settings_.publish_timeout.count(), "ms of the Publish() call; retry"));
            },
            /*paho_still_holds=*/true);
}

}  // namespace mmi::transport
