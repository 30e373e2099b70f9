#include "libs/transport/mqtt/mosquitto_subscriber.h"

#include <mosquitto.h>
#include <mqtt_protocol.h>

#include <cstdlib>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "libs/cloudevents/mqtt_codec.h"
#include "libs/transport/mqtt/internal/client_id.h"

namespace mmi::transport {
namespace {

const log::Logger& Log() {
  static const log::Logger logger("transport.mqtt");
  return logger;
}

// Copies one received PUBLISH into the codec's form: payload, Content Type, User Properties.
cloudevents::MqttMessage ToMqttMessage(const mosquitto_message& message,
                                       const mosquitto_property* props) {
  cloudevents::MqttMessage out;
  if (message.payloadlen > 0) {
    out.payload.assign(static_cast<const char*>(message.payload),
                       static_cast<std::size_t>(message.payloadlen));
  }
  std::size_t user_properties = 0;
  for (const mosquitto_property* p = props; p != nullptr; p = mosquitto_property_next(p)) {
    user_properties += mosquitto_property_identifier(p) == MQTT_PROP_USER_PROPERTY ? 1 : 0;
  }
  out.user_properties.reserve(user_properties);
  for (const mosquitto_property* p = props; p != nullptr; p = mosquitto_property_next(p)) {
    const int id = mosquitto_property_identifier(p);
    if (id == MQTT_PROP_CONTENT_TYPE) {
      char* value = nullptr;
      if (mosquitto_property_read_string(p, id, &value, false) != nullptr && value != nullptr) {
        out.content_type = std::string(value);
      }
      std::free(value);
    } else if (id == MQTT_PROP_USER_PROPERTY) {
      char* name = nullptr;
      char* value = nullptr;
      if (mosquitto_property_read_string_pair(p, id, &name, &value, false) != nullptr &&
          name != nullptr && value != nullptr) {
        out.user_properties.emplace_back(name, value);
      }
      std::free(name);
      std::free(value);
    }
  }
  return out;
}

}  // namespace

MosquittoSubscriber::MosquittoSubscriber(MqttSettings settings, prometheus::Registry& registry)
    : settings_(std::move(settings)),
      intake_log_(Log(), RealClock::Instance()),
      metrics_(registry, "mqtt", ClientRole::kSubscriber),
      topics_(settings_) {}

MosquittoSubscriber::~MosquittoSubscriber() { Stop(); }

absl::Status MosquittoSubscriber::Start(EventHandler handler, SubscribedHook on_subscribed) {
  if (!handler) {
    return absl::InvalidArgumentError("MosquittoSubscriber::Start: handler must be set");
  }
  if (absl::Status s = ValidateMqttSettings(settings_); !s.ok()) {
    return s;
  }
  {
    absl::MutexLock lock(&mu_);
    if (started_ || stopped_) {
      return absl::FailedPreconditionError("MosquittoSubscriber::Start called twice or after Stop");
    }
    started_ = true;
  }
  handler_ = std::move(handler);
  on_subscribed_ = std::move(on_subscribed);
  // A persistent session needs the same client id on every replica and restart.
  const bool persistent = settings_.session_expiry.count() > 0;
  connection_ = std::make_unique<internal::MosquittoConnection>(
      settings_,
      persistent ? internal::PersistentSessionClientId(settings_, "sub")
                 : internal::MqttClientId(settings_, "sub"),
      settings_.session_expiry, metrics_, Log());
  internal::MosquittoConnection::Hooks hooks;
  hooks.on_connected = [this](bool /*reconnect*/, std::size_t /*receive_maximum*/) { Subscribe(); };
  hooks.on_lost = [this] { subscribed_.store(false); };
  hooks.on_tick = [this] { intake_log_.Flush(); };
  hooks.on_subscribe = [this](int mid, absl::Span<const int> granted) {
    OnSubscribed(mid, granted);
  };
  hooks.on_message = [this](const mosquitto_message& message, const mosquitto_property* props) {
    OnMessage(message, props);
  };
  Log().Info("MQTT subscriber started",
             {{"library", "libmosquitto"},
              {"filters", absl::StrJoin(topics_.SubscriptionFilters(), ",")}});
  return connection_->Start(std::move(hooks), "mqtt-sub");
}

void MosquittoSubscriber::Subscribe() {
  // On every connection, a resumed session included (as MqttSubscriber does): the filters may
  // have changed with the configuration.
  const std::vector<std::string> filters = topics_.SubscriptionFilters();
  std::vector<char*> c_filters;
  c_filters.reserve(filters.size());
  for (const std::string& filter : filters) {
    c_filters.push_back(const_cast<char*>(filter.c_str()));
  }
  const int rc = mosquitto_subscribe_multiple(connection_->handle(), &subscribe_mid_,
                                              static_cast<int>(c_filters.size()), c_filters.data(),
                                              settings_.sub_qos, 0, nullptr);
  if (rc != MOSQ_ERR_SUCCESS) {
    connection_->Drop(absl::StrCat("SUBSCRIBE could not be sent: ", mosquitto_strerror(rc)));
  }
}

void MosquittoSubscriber::OnSubscribed(int mid, absl::Span<const int> granted) {
  if (mid != subscribe_mid_) {
    return;
  }
  if (!internal::SubAckGranted(Log(), granted)) {
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

void MosquittoSubscriber::OnMessage(const mosquitto_message& message,
                                    const mosquitto_property* props) {
  const cloudevents::MqttMessage mqtt_message = ToMqttMessage(message, props);
  internal::Intake(
      cloudevents::MqttMessageSize(mqtt_message), settings_.limits.max_event_bytes,
      [&]() { return cloudevents::DecodeMqtt(mqtt_message, settings_.limits); }, metrics_,
      intake_log_, message.topic != nullptr ? message.topic : "", handler_, [] {});
}

void MosquittoSubscriber::Stop() {
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

bool MosquittoSubscriber::connected() const {
  absl::MutexLock lock(&mu_);
  return subscribed_.load() && !stopped_;
}

}  // namespace mmi::transport
