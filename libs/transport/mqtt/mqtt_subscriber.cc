#include "libs/transport/mqtt/mqtt_subscriber.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "libs/cloudevents/mqtt_codec.h"
#include "libs/transport/internal/intake.h"
#include "libs/transport/mqtt/internal/client_id.h"
#include "libs/transport/mqtt/paho_message.h"

namespace mmi::transport {
namespace {

const log::Logger& Log() {
  static const log::Logger logger("transport.mqtt");
  return logger;
}

}  // namespace

void MqttSubscriber::SubscribeListener::on_success(const mqtt::token& token) {
  owner_->OnSubscribed(token);
}

void MqttSubscriber::SubscribeListener::on_failure(const mqtt::token& token) {
  owner_->connection_->ForceReconnect(absl::StrCat("SUBSCRIBE failed: return code ",
                                                   token.get_return_code(), ", reason code ",
                                                   static_cast<int>(token.get_reason_code())));
}

MqttSubscriber::MqttSubscriber(MqttSettings settings, prometheus::Registry& registry)
    : settings_(std::move(settings)),
      intake_log_(Log(), RealClock::Instance()),
      metrics_(registry, "mqtt", ClientRole::kSubscriber),
      topics_(settings_) {}

MqttSubscriber::~MqttSubscriber() { Stop(); }

absl::Status MqttSubscriber::Start(EventHandler handler, SubscribedHook on_subscribed) {
  if (!handler) {
    return absl::InvalidArgumentError("MqttSubscriber::Start: handler must be set");
  }
  if (absl::Status s = ValidateMqttSettings(settings_); !s.ok()) {
    return s;
  }
  {
    absl::MutexLock lock(&mu_);
    if (started_ || stopped_) {
      return absl::FailedPreconditionError("MqttSubscriber::Start called twice or after Stop");
    }
    started_ = true;
    handler_ = std::move(handler);
    on_subscribed_ = std::move(on_subscribed);
  }
  // A persistent session needs the same client id on every replica and restart.
  const std::string client_id = settings_.session_expiry.count() > 0
                                    ? internal::PersistentSessionClientId(settings_, "sub")
                                    : internal::MqttClientId(settings_, "sub");
  connection_ = std::make_unique<internal::MqttConnection>(settings_, client_id, metrics_, Log(),
                                                           settings_.session_expiry);
  internal::MqttConnection::Hooks hooks;
  hooks.on_connected = [this](bool reconnect) { Subscribe(reconnect); };
  hooks.on_lost = [this] {
    absl::MutexLock lock(&mu_);
    subscribed_ = false;
  };
  hooks.on_message = [this](mqtt::const_message_ptr message) { OnMessage(message); };
  hooks.on_tick = [this] { intake_log_.Flush(); };
  if (absl::Status s = connection_->Start(std::move(hooks)); !s.ok()) {
    return s;
  }
  Log().Info("MQTT subscriber started",
             {{"library", "paho"}, {"filters", absl::StrJoin(topics_.SubscriptionFilters(), ",")}});
  return absl::OkStatus();
}

void MqttSubscriber::Subscribe(bool reconnect) {
  {
    absl::MutexLock lock(&mu_);
    pending_reconnect_ = reconnect;
  }
  const std::vector<std::string> filters = topics_.SubscriptionFilters();
  auto collection = mqtt::string_collection::create(filters);
  mqtt::iasync_client::qos_collection qos(filters.size(), settings_.sub_qos);
  try {
    connection_->client().subscribe(collection, qos, nullptr, listener_);
  } catch (const std::exception& e) {
    connection_->ForceReconnect(absl::StrCat("SUBSCRIBE could not be sent: ", e.what()));
  }
}

void MqttSubscriber::OnSubscribed(const mqtt::token& token) {
  std::vector<int> codes;
  try {
    const mqtt::subscribe_response response = token.get_subscribe_response();
    for (mqtt::ReasonCode code : response.get_reason_codes()) {
      codes.push_back(static_cast<int>(code));
    }
  } catch (const std::exception&) {
    // MQTT 3 style response without reason codes: treat as granted.
  }
  if (!internal::SubAckGranted(Log(), codes)) {
    connection_->ForceReconnect("SUBACK refused a filter");
    return;
  }
  absl::MutexLock lock(&mu_);
  if (stopped_) {
    return;
  }
  subscribed_ = true;
  Log().Info("subscribed", {{"resubscribed", pending_reconnect_}});
  if (on_subscribed_) {
    on_subscribed_(pending_reconnect_);
  }
}

void MqttSubscriber::OnMessage(const mqtt::const_message_ptr& message) {
  if (message == nullptr) {
    return;
  }
  absl::MutexLock lock(&mu_);
  if (stopped_) {
    return;
  }
  const cloudevents::MqttMessage mqtt_message = FromPahoMessage(*message);
  internal::Intake(
      WireSize(mqtt_message), settings_.limits.max_event_bytes,
      [&]() { return cloudevents::DecodeMqtt(mqtt_message, settings_.limits); }, metrics_,
      intake_log_, message->get_topic(), handler_, [] {});
}

void MqttSubscriber::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) {
      return;
    }
    stopped_ = true;
    subscribed_ = false;
  }
  if (connection_ != nullptr) {
    connection_->Stop(std::chrono::milliseconds(1'000));
  }
  Log().Info("MQTT subscriber stopped");
}

bool MqttSubscriber::connected() const {
  absl::MutexLock lock(&mu_);
  return subscribed_ && !stopped_;
}

}  // namespace mmi::transport
