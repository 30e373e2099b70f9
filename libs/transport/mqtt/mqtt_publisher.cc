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
  owner_->window_.Complete(FromContext(token.get_user_context()), absl::OkStatus());
}

void MqttPublisher::DeliveryListener::on_failure(const mqtt::token& token) {
  owner_->window_.Complete(FromContext(token.get_user_context()), PublishFailure(token));
}

MqttPublisher::MqttPublisher(MqttSettings settings, Clock& clock, prometheus::Registry& registry)
    : settings_(std::move(settings)),
      clock_(clock),
      metrics_(registry, "mqtt", ClientRole::kPublisher),
      topics_(settings_),
      window_(internal::kMaxPendingPublishes, clock_, metrics_, Log(), callbacks_) {}

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
    window_.FailAll(absl::UnavailableError(
        "MQTT connection lost before the broker acknowledged the event; it may or may not have "
        "been delivered: retry"));
  };
  hooks.on_tick = [this] { window_.Tick(UpdateWindow(), settings_); };
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
    window_.Reject(
        std::move(done),
        absl::FailedPreconditionError("MqttPublisher: Publish() before Start() or after Stop()"),
        started);
    return;
  }
  absl::StatusOr<internal::EncodedPublish> encoded =
      internal::EncodeForPublish(settings_, topics_, event);
  if (!encoded.ok()) {
    window_.Reject(std::move(done), encoded.status(), started);
    return;
  }
  if (!connection_->connected()) {
    window_.Reject(std::move(done), window_.NotConnected(settings_), started);
    return;
  }
  mqtt::message_ptr message = ToPahoMessage(encoded->topic, settings_.pub_qos, encoded->message);
  // The sender thread hands it to Paho, in call order, once the window has room.
  window_.Accept(std::move(done), started, started + settings_.publish_timeout, std::move(event.id),
                 std::move(message));
}

void MqttPublisher::SendLoop() {
  while (auto next = window_.TakeNext(/*wait=*/true)) {
    const uint64_t id = next->first;
    try {
      connection_->client().publish(std::move(next->second), ToContext(id), listener_);
    } catch (const mqtt::exception& e) {
      const std::string detail = absl::StrCat("MQTT publish failed: ", e.what());
      window_.Complete(id,
                       e.get_return_code() == MQTTASYNC_MAX_BUFFERED_MESSAGES
                           ? absl::ResourceExhaustedError(
                                 detail + " (too many events waiting for a PUBACK; retry later)")
                           : absl::UnavailableError(detail));
    } catch (const std::exception& e) {
      window_.Complete(id, absl::UnavailableError(absl::StrCat("MQTT publish failed: ", e.what())));
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
  // The sender still hands held events to Paho meanwhile.
  window_.AwaitDrained(absl::FromChrono(
      std::min<std::chrono::milliseconds>(settings_.publish_timeout, std::chrono::seconds(10))));
  window_.StopSending();
  if (sender_.joinable()) {
    sender_.join();
  }
  window_.FailAll(absl::UnavailableError(
      "MQTT publisher stopped before the broker acknowledged the event: retry"));
  connection_->Stop(std::chrono::milliseconds(1'000));
  callbacks_.Stop();
  Log().Info("MQTT publisher stopped");
}

bool MqttPublisher::connected() const { return connection_ != nullptr && connection_->connected(); }

size_t MqttPublisher::max_in_flight() const {
  return connection_ != nullptr ? connection_->receive_maximum() : Publisher::max_in_flight();
}

size_t MqttPublisher::PeakInFlightForTest() const { return window_.peak_handed(); }

bool MqttPublisher::UpdateWindow() {
  const bool connected = connection_->connected();
  // QoS 0 has no PUBACK, and Paho C does not count it against Receive Maximum.
  window_.SetWindow(!connected               ? 0
                    : settings_.pub_qos == 0 ? internal::kMaxPendingPublishes
                                             : connection_->receive_maximum());
  return connected;
}

}  // namespace mmi::transport
