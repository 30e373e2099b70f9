#include "libs/transport/mqtt/native_mqtt_publisher.h"

#include <mqtt_protocol.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "libs/common/status_macros.h"
#include "libs/transport/mqtt/internal/client_id.h"

namespace mmi::transport {
namespace {

const log::Logger& Log() {
  static const log::Logger logger("transport.mqtt");
  return logger;
}

// MQTT 5 PUBACK reason code >= 0x80 -> STYLE.md code.
absl::Status PubackFailure(int reason) {
  const std::string detail = absl::StrCat("MQTT publish failed: reason code ", reason);
  switch (reason) {
    case MQTT_RC_QUOTA_EXCEEDED:
      return absl::ResourceExhaustedError(detail + " (quota exceeded)");
    case MQTT_RC_NOT_AUTHORIZED:
      return absl::PermissionDeniedError(detail + " (not authorized: check the broker ACL)");
    case MQTT_RC_TOPIC_NAME_INVALID:
    case MQTT_RC_PACKET_TOO_LARGE:
    case MQTT_RC_PAYLOAD_FORMAT_INVALID:
      return absl::InvalidArgumentError(detail + " (rejected by the broker)");
    default:
      return absl::UnavailableError(detail);
  }
}

// The checks and the encoding Publish() makes before queueing: the event's source is
// ours (kInvalidArgument), it has a topic (MqttTopics::PublishTopic's error), it encodes within
// the limits (kInvalidArgument).
absl::StatusOr<internal::EncodedPublish> EncodeForPublish(const MqttSettings& settings,
                                                          const MqttTopics& topics,
                                                          const cloudevents::Event& event) {
  if (event.source != settings.source_id) {
    return absl::InvalidArgumentError(
        absl::StrCat("event ", event.id, " has source \"", event.source,
                     "\" but this transport publishes as source id \"", settings.source_id, "\""));
  }
  ASSIGN_OR_RETURN(std::string topic, topics.PublishTopic(event));
  absl::StatusOr<cloudevents::MqttMessage> encoded =
      cloudevents::EncodeMqtt(event, cloudevents::MqttContentMode::kBinary, settings.limits);
  if (!encoded.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot encode event ", event.id, " for MQTT: ", std::string(encoded.status().message())));
  }
  return internal::EncodedPublish{std::move(topic), *std::move(encoded)};
}

}  // namespace

NativeMqttPublisher::NativeMqttPublisher(MqttSettings settings, Clock& clock,
                                         prometheus::Registry& registry)
    : settings_(std::move(settings)),
      clock_(clock),
      metrics_(registry, "mqtt", ClientRole::kPublisher),
      topics_(settings_),
      window_(internal::kMaxPendingPublishes, clock_, metrics_, Log(), callbacks_) {}

NativeMqttPublisher::~NativeMqttPublisher() { Stop(); }

absl::Status NativeMqttPublisher::Start() {
  absl::WriterMutexLock lock(&lifecycle_mu_);
  if (started_ || stopped_) {
    return absl::FailedPreconditionError("NativeMqttPublisher::Start called twice or after Stop");
  }
  RETURN_IF_ERROR(ValidateMqttSettings(settings_));
  connection_ = std::make_unique<internal::NativeMqttConnection>(
      settings_, internal::MqttClientId(settings_, "pub"), std::chrono::seconds(0), metrics_,
      Log());
  internal::NativeMqttConnection::Hooks hooks;
  // A restarted broker may announce another Receive Maximum: read on every connect.
  hooks.on_connected = [this](bool /*reconnect*/, const internal::mqtt5::ConnAck& connack) {
    receive_maximum_.store(connack.receive_maximum);
    max_packet_bytes_ = connack.maximum_packet_size;
    // QoS 0 has no PUBACK and takes no slot of the broker's.
    window_.SetWindow(settings_.pub_qos == 0 ? static_cast<size_t>(internal::kMaxPendingPublishes)
                                             : connack.receive_maximum);
  };
  hooks.on_lost = [this] {
    window_.SetWindow(0);
    by_packet_id_.clear();
    window_.FailAll(absl::UnavailableError(
        "MQTT connection lost before the broker acknowledged the event; it may or may not have "
        "been delivered: retry"));
  };
  hooks.on_turn = [this] { SendHeld(); };
  hooks.on_tick = [this] { window_.Tick(connection_->connected(), settings_); };
  hooks.on_puback = [this](const internal::mqtt5::PubAck& puback) { OnPubAck(puback); };
  RETURN_IF_ERROR(connection_->Start(std::move(hooks), "mqtt-pub"));
  started_ = true;
  Log().Info("MQTT publisher started",
             {{"summary", RedactedSummary(TransportSettings(settings_))}});
  return absl::OkStatus();
}

void NativeMqttPublisher::Publish(cloudevents::Event event, PublishCallback done) {
  const auto started = clock_.MonotonicNow();
  absl::ReaderMutexLock lock(&lifecycle_mu_);
  if (!started_ || stopped_) {
    window_.Reject(std::move(done),
                   absl::FailedPreconditionError(
                       "NativeMqttPublisher: Publish() before Start() or after Stop()"),
                   started);
    return;
  }
  absl::StatusOr<internal::EncodedPublish> encoded = EncodeForPublish(settings_, topics_, event);
  if (!encoded.ok()) {
    window_.Reject(std::move(done), encoded.status(), started);
    return;
  }
  if (!connection_->connected()) {
    window_.Reject(std::move(done), window_.NotConnected(settings_), started);
    return;
  }
  // The connection thread sends what is held on every turn; it needs a wake-up only when it
  // may sleep with this one held.
  bool wake = false;
  if (!window_.Accept(std::move(done), started, started + settings_.publish_timeout,
                      std::move(event.id), *std::move(encoded), wake)) {
    return;
  }
  if (wake) {
    connection_->Wake();
  }
}

void NativeMqttPublisher::SendHeld() {
  std::string& out = connection_->output();
  while (auto next = window_.TakeNext()) {
    const auto& [id, publish] = *next;
    uint16_t packet_id = 0;
    while (settings_.pub_qos == 1 && (packet_id == 0 || by_packet_id_.contains(packet_id))) {
      packet_id = connection_->NextPacketId();  // at most Receive Maximum (< 65,535) are taken
    }
    const std::size_t before = out.size();
    absl::Status status = internal::mqtt5::AppendPublish(publish.topic, settings_.pub_qos,
                                                         packet_id, publish.message, out);
    if (status.ok() && max_packet_bytes_ > 0 && out.size() - before > max_packet_bytes_) {
      status = absl::InvalidArgumentError(
          absl::StrCat("MQTT publish failed: ", out.size() - before,
                       " bytes, above the broker's Maximum Packet Size of ", max_packet_bytes_));
      out.resize(before);
    }
    if (!status.ok() || settings_.pub_qos == 0) {
      window_.Complete(id, std::move(status));
    } else {
      by_packet_id_.emplace(packet_id, id);
    }
  }
}

void NativeMqttPublisher::OnPubAck(const internal::mqtt5::PubAck& puback) {
  const auto it = by_packet_id_.find(puback.packet_id);
  if (it == by_packet_id_.end()) {
    return;  // not one of this connection's
  }
  const uint64_t id = it->second;
  by_packet_id_.erase(it);
  window_.Complete(
      id, puback.reason_code < 0x80 ? absl::OkStatus() : PubackFailure(puback.reason_code));
}

void NativeMqttPublisher::Stop() {
  {
    absl::WriterMutexLock lock(&lifecycle_mu_);
    if (!internal::BeginPublisherStop(started_, stopped_, callbacks_)) {
      return;
    }
  }
  // The connection thread still sends what is held and reads PUBACKs meanwhile.
  window_.AwaitDrained(absl::FromChrono(
      std::min<std::chrono::milliseconds>(settings_.publish_timeout, std::chrono::seconds(10))));
  window_.StopSending();
  window_.FailAll(absl::UnavailableError(
      "MQTT publisher stopped before the broker acknowledged the event: retry"));
  connection_->Stop();
  callbacks_.Stop();
  Log().Info("MQTT publisher stopped");
}

bool NativeMqttPublisher::connected() const {
  return connection_ != nullptr && connection_->connected();
}

size_t NativeMqttPublisher::max_in_flight() const { return receive_maximum_.load(); }

size_t NativeMqttPublisher::PeakInFlightForTest() const { return window_.peak_handed(); }

}  // namespace mmi::transport
