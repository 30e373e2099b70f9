#include "libs/transport/mqtt/mosquitto_publisher.h"

#include <mosquitto.h>
#include <mqtt_protocol.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "libs/common/status_macros.h"
#include "libs/transport/mqtt/internal/client_id.h"
#include "libs/transport/mqtt/mosquitto_message.h"

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

// A libmosquitto publish call that failed -> STYLE.md code.
absl::Status PublishCallFailure(int rc) {
  const std::string detail = absl::StrCat("MQTT publish failed: ", mosquitto_strerror(rc));
  switch (rc) {
    case MOSQ_ERR_OVERSIZE_PACKET:
    case MOSQ_ERR_PAYLOAD_SIZE:
    case MOSQ_ERR_MALFORMED_UTF8:
    case MOSQ_ERR_INVAL:
    case MOSQ_ERR_DUPLICATE_PROPERTY:
    case MOSQ_ERR_QOS_NOT_SUPPORTED:
      return absl::InvalidArgumentError(detail);
    case MOSQ_ERR_NOMEM:
      return absl::ResourceExhaustedError(detail);
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

MosquittoPublisher::MosquittoPublisher(MqttSettings settings, Clock& clock,
                                       prometheus::Registry& registry)
    : settings_(std::move(settings)),
      clock_(clock),
      metrics_(registry, "mqtt", ClientRole::kPublisher),
      topics_(settings_),
      window_(internal::kMaxPendingPublishes, clock_, metrics_, Log(), callbacks_) {}

MosquittoPublisher::~MosquittoPublisher() { Stop(); }

absl::Status MosquittoPublisher::Start() {
  absl::WriterMutexLock lock(&lifecycle_mu_);
  if (started_ || stopped_) {
    return absl::FailedPreconditionError("MosquittoPublisher::Start called twice or after Stop");
  }
  RETURN_IF_ERROR(ValidateMqttSettings(settings_));
  connection_ = std::make_unique<internal::MosquittoConnection>(
      settings_, internal::MqttClientId(settings_, "pub"), metrics_, Log());
  internal::MosquittoConnection::Hooks hooks;
  // A restarted broker may announce another Receive Maximum: read on every connect.
  hooks.on_connected = [this](bool /*reconnect*/, std::size_t receive_maximum) {
    receive_maximum_.store(receive_maximum);
    // QoS 0 has no PUBACK and takes no slot of the broker's.
    window_.SetWindow(settings_.pub_qos == 0 ? static_cast<size_t>(internal::kMaxPendingPublishes)
                                             : receive_maximum);
    SendHeld();
  };
  hooks.on_lost = [this] {
    window_.SetWindow(0);
    by_mid_.clear();  // the handle that knew these ids is gone
    written_early_.clear();
    window_.FailAll(absl::UnavailableError(
        "MQTT connection lost before the broker acknowledged the event; it may or may not have "
        "been delivered: retry"));
  };
  hooks.on_turn = [this] { SendHeld(); };
  hooks.on_tick = [this] { window_.Tick(connection_->connected(), settings_); };
  hooks.on_publish = [this](int mid, int reason_code) { OnPublished(mid, reason_code); };
  RETURN_IF_ERROR(connection_->Start(std::move(hooks), "mqtt-pub"));
  started_ = true;
  Log().Info("MQTT publisher started",
             {{"summary", RedactedSummary(TransportSettings(settings_))}});
  return absl::OkStatus();
}

void MosquittoPublisher::Publish(cloudevents::Event event, PublishCallback done) {
  const auto started = clock_.MonotonicNow();
  absl::ReaderMutexLock lock(&lifecycle_mu_);
  if (!started_ || stopped_) {
    window_.Reject(std::move(done),
                   absl::FailedPreconditionError(
                       "MosquittoPublisher: Publish() before Start() or after Stop()"),
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
                      std::move(event.id), *std::move(encoded), &wake)) {
    return;
  }
  if (wake) {
    connection_->Wake();
  }
}

void MosquittoPublisher::SendHeld() {
  mosquitto* mosq = connection_->handle();
  while (auto next = window_.TakeNext()) {
    const uint64_t id = next->first;
    const internal::EncodedPublish& publish = next->second;
    absl::StatusOr<MosquittoProperties> props = ToMosquittoProperties(publish.message);
    int mid = 0;
    const int rc = !props.ok()
                       ? MOSQ_ERR_INVAL
                       : mosquitto_publish_v5(mosq, &mid, publish.topic.c_str(),
                                              static_cast<int>(publish.message.payload.size()),
                                              publish.message.payload.data(), settings_.pub_qos,
                                              false, props->get());
    if (rc != MOSQ_ERR_SUCCESS) {
      window_.Complete(id, PublishCallFailure(rc));
    } else if (written_early_.erase(mid) > 0) {
      // QoS 0, written inside the call: libmosquitto reported it before its id was known here.
      window_.Complete(id, absl::OkStatus());
    } else {
      by_mid_.emplace(mid, id);
    }
  }
}

void MosquittoPublisher::OnPublished(int mid, int reason_code) {
  auto it = by_mid_.find(mid);
  if (it == by_mid_.end()) {
    if (settings_.pub_qos == 0) {
      written_early_.insert(mid);
    }
    return;
  }
  const uint64_t id = it->second;
  by_mid_.erase(it);
  window_.Complete(id, reason_code < 0x80 ? absl::OkStatus() : PubackFailure(reason_code));
}

void MosquittoPublisher::Stop() {
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

bool MosquittoPublisher::connected() const {
  return connection_ != nullptr && connection_->connected();
}

size_t MosquittoPublisher::max_in_flight() const { return receive_maximum_.load(); }

size_t MosquittoPublisher::PeakInFlightForTest() const { return window_.peak_handed(); }

}  // namespace mmi::transport
