#include "libs/transport/mqtt/native_mqtt_subscriber.h"

#include <string>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/strings/str_join.h"
#include "libs/common/status_macros.h"
#include "libs/transport/mqtt/internal/client_id.h"

namespace mmi::transport {
namespace {

const log::Logger& Log() {
  static const log::Logger logger("transport.mqtt");
  return logger;
}

}  // namespace

NativeMqttSubscriber::NativeMqttSubscriber(MqttSettings settings, prometheus::Registry& registry)
    : settings_(std::move(settings)),
      intake_log_(Log(), RealClock::Instance()),
      metrics_(registry, "mqtt", ClientRole::kSubscriber),
      topics_(settings_) {}

NativeMqttSubscriber::~NativeMqttSubscriber() { Stop(); }

absl::Status NativeMqttSubscriber::Start(EventHandler handler, SubscribedHook on_subscribed) {
  if (!handler) {
    return absl::InvalidArgumentError("NativeMqttSubscriber::Start: handler must be set");
  }
  RETURN_IF_ERROR(ValidateMqttSettings(settings_));
  {
    absl::MutexLock lock(&mu_);
    if (started_ || stopped_) {
      return absl::FailedPreconditionError(
          "NativeMqttSubscriber::Start called twice or after Stop");
    }
    started_ = true;
  }
  handler_ = std::move(handler);
  on_subscribed_ = std::move(on_subscribed);
  // A persistent session needs the same client id on every replica and restart.
  const bool persistent = settings_.session_expiry.count() > 0;
  connection_ = std::make_unique<internal::NativeMqttConnection>(
      settings_,
      persistent ? internal::PersistentSessionClientId(settings_, "sub")
                 : internal::MqttClientId(settings_, "sub"),
      settings_.session_expiry, metrics_, Log());
  internal::NativeMqttConnection::Hooks hooks;
  hooks.on_connected = [this](bool /*reconnect*/, const internal::mqtt5::ConnAck&) { Subscribe(); };
  hooks.on_lost = [this] { subscribed_.store(false); };
  hooks.on_tick = [this] { intake_log_.Flush(); };
  hooks.on_suback = [this](const internal::mqtt5::SubAck& suback) { OnSubAck(suback); };
  hooks.on_publish = [this](const internal::mqtt5::Publish& publish) { OnPublish(publish); };
  Log().Info("MQTT subscriber started",
             {{"filters", absl::StrJoin(topics_.SubscriptionFilters(), ",")}});
  return connection_->Start(std::move(hooks), "mqtt-sub");
}

void NativeMqttSubscriber::Subscribe() {
  // On every connection, a resumed session included: the filters may have changed with the
  // configuration.
  subscribe_id_ = connection_->NextPacketId();
  internal::mqtt5::AppendSubscribe(subscribe_id_, topics_.SubscriptionFilters(), settings_.sub_qos,
                                   connection_->output());
}

void NativeMqttSubscriber::OnSubAck(const internal::mqtt5::SubAck& suback) {
  if (suback.packet_id != subscribe_id_) {
    return;
  }
  // A reason code >= 0x80: the broker refused one of the filters.
  const auto refused = absl::c_find_if(suback.reason_codes, [](int code) { return code >= 0x80; });
  if (refused != suback.reason_codes.end()) {
    Log().Error("the broker refused a subscription; check the topic filters and the ACL",
                {{"reason_code", *refused}});
    connection_->Drop("SUBACK refused a filter");
    return;
  }
  const bool resubscribed = ever_subscribed_;
  ever_subscribed_ = true;
  subscribed_.store(true);
  Log().Info("subscribed", {{"resubscribed", resubscribed}});
  if (on_subscribed_) {
    on_subscribed_(resubscribed);
  }
}

void NativeMqttSubscriber::OnPublish(const internal::mqtt5::Publish& publish) {
  // Into the codec's form (payload, Content Type, User Properties), reusing the strings'
  // capacity from the last event.
  message_.payload.assign(publish.payload);
  if (publish.content_type.has_value()) {
    message_.content_type.emplace().assign(*publish.content_type);
  } else {
    message_.content_type.reset();
  }
  message_.user_properties.resize(publish.user_properties.size());
  for (std::size_t i = 0; i < publish.user_properties.size(); ++i) {
    message_.user_properties[i].first.assign(publish.user_properties[i].first);
    message_.user_properties[i].second.assign(publish.user_properties[i].second);
  }
  internal::Intake(
      cloudevents::MqttMessageSize(message_), settings_.limits.max_event_bytes,
      [&]() { return cloudevents::DecodeMqtt(message_, settings_.limits); }, metrics_, intake_log_,
      publish.topic, handler_, [] {});
}

void NativeMqttSubscriber::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) {
      return;
    }
    stopped_ = true;
  }
  subscribed_.store(false);
  if (connection_ != nullptr) {
    connection_->Stop();
  }
  Log().Info("MQTT subscriber stopped");
}

bool NativeMqttSubscriber::connected() const {
  absl::MutexLock lock(&mu_);
  return subscribed_.load() && !stopped_;
}

}  // namespace mmi::transport
