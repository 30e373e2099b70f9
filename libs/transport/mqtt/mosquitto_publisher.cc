#include "libs/transport/mqtt/mosquitto_publisher.h"

#include <mosquitto.h>
#include <mqtt_protocol.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "libs/transport/mqtt/internal/client_id.h"
#include "libs/transport/mqtt/internal/mqtt_connection.h"

namespace mmi::transport {
namespace {

const log::Logger& Log() {
  static const log::Logger logger("transport.mqtt");
  return logger;
}

// MQTT 5 PUBACK reason code >= 0x80 -> STYLE.md code (as MqttPublisher maps Paho's).
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

// The PUBLISH properties of one binary-mode event: Content Type and the User Properties.
mosquitto_property* Properties(const cloudevents::MqttMessage& message, int* rc) {
  mosquitto_property* props = nullptr;
  *rc = MOSQ_ERR_SUCCESS;
  if (message.content_type.has_value()) {
    *rc = mosquitto_property_add_string(&props, MQTT_PROP_CONTENT_TYPE,
                                        message.content_type->c_str());
  }
  for (const auto& [name, value] : message.user_properties) {
    if (*rc != MOSQ_ERR_SUCCESS) {
      break;
    }
    *rc = mosquitto_property_add_string_pair(&props, MQTT_PROP_USER_PROPERTY, name.c_str(),
                                             value.c_str());
  }
  return props;
}

}  // namespace

MosquittoPublisher::MosquittoPublisher(MqttSettings settings, Clock& clock,
                                       prometheus::Registry& registry)
    : settings_(std::move(settings)),
      clock_(clock),
      metrics_(registry, "mqtt", ClientRole::kPublisher),
      topics_(settings_) {}

MosquittoPublisher::~MosquittoPublisher() { Stop(); }

absl::Status MosquittoPublisher::Start() {
  absl::WriterMutexLock lock(&lifecycle_mu_);
  if (started_ || stopped_) {
    return absl::FailedPreconditionError("MosquittoPublisher::Start called twice or after Stop");
  }
  if (absl::Status s = ValidateMqttSettings(settings_); !s.ok()) {
    return s;
  }
  connection_ = std::make_unique<internal::MosquittoConnection>(
      settings_, internal::MqttClientId(settings_, "pub"), std::chrono::seconds(0), metrics_,
      Log());
  internal::MosquittoConnection::Hooks hooks;
  // A restarted broker may announce another Receive Maximum: read on every connect.
  hooks.on_connected = [this](bool /*reconnect*/, std::size_t receive_maximum) {
    receive_maximum_.store(receive_maximum);
    {
      absl::MutexLock inflight_lock(&inflight_mu_);
      window_ = settings_.pub_qos == 0 ? static_cast<size_t>(internal::kMaxPendingPublishes)
                                       : receive_maximum;
    }
    SendHeld();
  };
  hooks.on_lost = [this] {
    {
      absl::MutexLock inflight_lock(&inflight_mu_);
      window_ = 0;
      by_mid_.clear();  // the handle that knew these ids is gone
      written_early_.clear();
    }
    FailAllInFlight(absl::UnavailableError(
        "MQTT connection lost before the broker acknowledged the event; it may or may not have "
        "been delivered: retry"));
  };
  hooks.on_turn = [this] { SendHeld(); };
  hooks.on_tick = [this] {
    if (!connection_->connected()) {
      // Accepted just as the connection dropped (after on_lost): fail now rather than at the
      // deadline.
      FailAllInFlight(absl::UnavailableError(
          absl::StrCat("MQTT broker ", settings_.broker_host, " is not connected; retry later")));
    }
    ExpireDeadlines();
  };
  hooks.on_publish = [this](int mid, int reason_code) { OnPublished(mid, reason_code); };
  if (absl::Status s = connection_->Start(std::move(hooks), "mqtt-pub"); !s.ok()) {
    return s;
  }
  started_ = true;
  Log().Info(
      "MQTT publisher started",
      {{"library", "libmosquitto"}, {"summary", RedactedSummary(TransportSettings(settings_))}});
  return absl::OkStatus();
}

void MosquittoPublisher::Publish(cloudevents::Event event, PublishCallback done) {
  const auto started = clock_.MonotonicNow();
  absl::ReaderMutexLock lock(&lifecycle_mu_);
  if (!started_ || stopped_) {
    Reject(std::move(done),
           absl::FailedPreconditionError(
               "MosquittoPublisher: Publish() before Start() or after Stop()"),
           started);
    return;
  }
  if (event.source != settings_.source_id) {
    Reject(std::move(done),
           absl::InvalidArgumentError(absl::StrCat(
               "event ", event.id, " has source \"", event.source,
               "\" but this transport publishes as source id \"", settings_.source_id, "\"")),
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
  bool accepted = false;
  bool wake = false;
  {
    absl::MutexLock inflight_lock(&inflight_mu_);
    if (inflight_.size() < static_cast<size_t>(internal::kMaxPendingPublishes)) {
      inflight_.emplace(next_id_++,
                        InFlight{std::move(done), started, started + settings_.publish_timeout,
                                 std::move(event.id), *std::move(topic), *std::move(encoded)});
      metrics_.SetPublishHeld(held());
      accepted = true;
      // The connection thread sends whatever is held on every turn; it needs a wake-up only
      // when it may sleep with this one held.
      wake = held() == 1 && handed_ < window_;
    }
  }
  if (!accepted) {
    Reject(std::move(done),
           absl::ResourceExhaustedError(absl::StrCat(
               "MQTT publisher: ", internal::kMaxPendingPublishes,
               " events already wait for the broker's PUBACK or for room in its in-flight "
               "window; retry later")),
           started);
    return;
  }
  if (wake) {
    connection_->Wake();
  }
}

void MosquittoPublisher::SendHeld() {
  mosquitto* mosq = connection_->handle();
  while (true) {
    uint64_t id = 0;
    std::string topic;
    cloudevents::MqttMessage message;
    {
      absl::MutexLock lock(&inflight_mu_);
      if (handed_ >= window_ || held() == 0) {
        return;
      }
      auto it = inflight_.lower_bound(next_send_);  // the oldest held event: held() > 0
      id = it->first;
      topic = std::move(it->second.topic);
      message = std::move(it->second.message);
      next_send_ = id + 1;
      ++handed_;
      peak_handed_ = std::max(peak_handed_, handed_);
      metrics_.SetPublishHeld(held());
    }
    int rc = MOSQ_ERR_SUCCESS;
    mosquitto_property* props = Properties(message, &rc);
    int mid = 0;
    if (rc == MOSQ_ERR_SUCCESS) {
      // Registered before the call: a QoS 0 publish may report itself written inside it.
      rc = mosquitto_publish_v5(mosq, &mid, topic.c_str(), static_cast<int>(message.payload.size()),
                                message.payload.data(), settings_.pub_qos, false, props);
    }
    mosquitto_property_free_all(&props);
    if (rc != MOSQ_ERR_SUCCESS) {
      Complete(id, PublishCallFailure(rc));
      continue;
    }
    bool written = false;
    {
      absl::MutexLock lock(&inflight_mu_);
      // A QoS 0 publish that was written inside the call reported itself before its id was
      // known here (OnPublished found nothing): it is done.
      written = settings_.pub_qos == 0 && written_early_.erase(mid) > 0;
      if (!written) {
        by_mid_.emplace(mid, id);
      }
    }
    if (written) {
      Complete(id, absl::OkStatus());
    }
  }
}

void MosquittoPublisher::OnPublished(int mid, int reason_code) {
  uint64_t id = 0;
  {
    absl::MutexLock lock(&inflight_mu_);
    auto it = by_mid_.find(mid);
    if (it == by_mid_.end()) {
      if (settings_.pub_qos == 0) {
        written_early_.insert(mid);
      }
      return;
    }
    id = it->second;
    by_mid_.erase(it);
  }
  Complete(id, reason_code < 0x80 ? absl::OkStatus() : PubackFailure(reason_code));
}

void MosquittoPublisher::Stop() {
  {
    absl::WriterMutexLock lock(&lifecycle_mu_);
    if (!internal::BeginPublisherStop(started_, stopped_, callbacks_)) {
      return;
    }
  }
  {
    // The connection thread still sends what is held and reads PUBACKs meanwhile.
    absl::MutexLock lock(&inflight_mu_);
    auto drained = [this]()
                       ABSL_EXCLUSIVE_LOCKS_REQUIRED(inflight_mu_) { return inflight_.empty(); };
    inflight_mu_.AwaitWithTimeout(absl::Condition(&drained),
                                  absl::FromChrono(std::min<std::chrono::milliseconds>(
                                      settings_.publish_timeout, std::chrono::seconds(10))));
  }
  FailAllInFlight(absl::UnavailableError(
      "MQTT publisher stopped before the broker acknowledged the event: retry"));
  connection_->Stop();
  FailAllInFlight(absl::UnavailableError(
      "MQTT publisher stopped before the broker acknowledged the event: retry"));
  callbacks_.Stop();
  Log().Info("MQTT publisher stopped");
}

bool MosquittoPublisher::connected() const {
  return connection_ != nullptr && connection_->connected();
}

size_t MosquittoPublisher::max_in_flight() const { return receive_maximum_.load(); }

size_t MosquittoPublisher::PeakInFlightForTest() const {
  absl::MutexLock lock(&inflight_mu_);
  return peak_handed_;
}

void MosquittoPublisher::Complete(uint64_t id, absl::Status status) {
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
      --handed_;  // frees a slot of the window
    } else {
      metrics_.SetPublishHeld(held());
    }
  }
  if (entry.expired) {
    return;  // its caller heard of the deadline already; only its slot was still taken
  }
  Finish(std::move(entry), std::move(status));
}

void MosquittoPublisher::FailWhere(absl::FunctionRef<bool(const InFlight&)> selected,
                                   absl::FunctionRef<absl::Status()> status,
                                   bool library_still_holds) {
  std::vector<InFlight> failed;
  {
    absl::MutexLock lock(&inflight_mu_);
    for (auto it = inflight_.begin(); it != inflight_.end();) {
      if (it->second.expired || !selected(it->second)) {
        ++it;
        continue;
      }
      if (it->first < next_send_ && library_still_holds) {
        // Failed for its caller, but libmosquitto still waits for its PUBACK: the slot stays
        // taken until that comes or the connection drops, so it never holds more than the window.
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

void MosquittoPublisher::FailAllInFlight(const absl::Status& status) {
  {
    // Slots kept for expired events libmosquitto held: the connection (and what it held) is gone.
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
            /*library_still_holds=*/false);
}

void MosquittoPublisher::ExpireDeadlines() {
  const auto now = clock_.MonotonicNow();
  FailWhere([now](const InFlight& entry) { return entry.deadline <= now; },
            [this] {
              return absl::DeadlineExceededError(absl::StrCat(
                  "no PUBACK from MQTT broker ", settings_.broker_host, " within ",
                  settings_.publish_timeout.count(), "ms of the Publish() call; retry"));
            },
            /*library_still_holds=*/true);
}

void MosquittoPublisher::Finish(InFlight entry, absl::Status status) {
  metrics_.RecordPublish(status, clock_.MonotonicNow() - entry.started);
  if (!status.ok()) {
    Log().Debug("publish failed",
                {{"event_id", entry.event_id}, {"error", std::string(status.message())}});
  }
  callbacks_.Post([done = std::move(entry.done), status = std::move(status)]() mutable {
    std::move(done)(std::move(status));
  });
}

void MosquittoPublisher::Reject(PublishCallback done, absl::Status status,
                                std::chrono::steady_clock::time_point started) {
  metrics_.RecordPublish(status, clock_.MonotonicNow() - started);
  callbacks_.Post([done = std::move(done), status = std::move(status)]() mutable {
    std::move(done)(std::move(status));
  });
}

}  // namespace mmi::transport
