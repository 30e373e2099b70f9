#include "libs/transport/mqtt/testing/mqtt_test_client.h"

#include <mosquitto.h>
#include <mqtt_protocol.h>

#include <mutex>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "libs/transport/mqtt/mosquitto_message.h"

namespace mmi::transport::testing {

MqttTestClient::MqttTestClient(MqttTestClientOptions options) : options_(std::move(options)) {}

absl::StatusOr<std::unique_ptr<MqttTestClient>> MqttTestClient::Connect(
    MqttTestClientOptions options, std::chrono::milliseconds timeout) {
  static std::once_flag init;
  std::call_once(init, [] { mosquitto_lib_init(); });
  std::unique_ptr<MqttTestClient> client(new MqttTestClient(std::move(options)));
  const MqttTestClientOptions& o = client->options_;
  client->mosq_ = mosquitto_new(o.client_id.c_str(), /*clean_session=*/true, client.get());
  if (client->mosq_ == nullptr) {
    return absl::ResourceExhaustedError("mosquitto_new failed");
  }
  mosquitto* mosq = client->mosq_;
  mosquitto_int_option(mosq, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V5);
  if (!o.username.empty()) {
    mosquitto_username_pw_set(mosq, o.username.c_str(),
                              o.password.empty() ? nullptr : o.password.c_str());
  }
  if (!o.ca_file.empty() && mosquitto_tls_set(mosq, o.ca_file.c_str(), nullptr,
                                              o.cert_file.empty() ? nullptr : o.cert_file.c_str(),
                                              o.key_file.empty() ? nullptr : o.key_file.c_str(),
                                              nullptr) != MOSQ_ERR_SUCCESS) {
    return absl::InvalidArgumentError("mosquitto_tls_set failed");
  }
  mosquitto_reconnect_delay_set(mosq, 1, 1, false);
  mosquitto_connect_v5_callback_set(mosq, &MqttTestClient::OnConnect);
  mosquitto_subscribe_v5_callback_set(mosq, &MqttTestClient::OnSubscribe);
  mosquitto_message_v5_callback_set(mosq, &MqttTestClient::OnMessageCallback);
  mosquitto_publish_v5_callback_set(mosq, &MqttTestClient::OnPublish);
  mosquitto_disconnect_v5_callback_set(mosq, &MqttTestClient::OnDisconnect);
  const auto colon = o.host_port.rfind(':');
  const int rc = mosquitto_connect_async(mosq, o.host_port.substr(0, colon).c_str(),
                                         std::stoi(o.host_port.substr(colon + 1)), o.keep_alive_s);
  if (rc != MOSQ_ERR_SUCCESS) {
    return absl::UnavailableError(absl::StrCat("connect: ", mosquitto_strerror(rc)));
  }
  mosquitto_loop_start(mosq);
  absl::MutexLock lock(&client->mu_);
  MqttTestClient* self = client.get();
  client->mu_.AwaitWithTimeout(absl::Condition(
                                   +[](MqttTestClient* c) ABSL_EXCLUSIVE_LOCKS_REQUIRED(c->mu_) {
                                     return c->connack_.has_value();
                                   },
                                   self),
                               absl::FromChrono(timeout));
  if (!client->connack_.has_value()) {
    return absl::UnavailableError("no CONNACK in time (TLS or TCP refused?)");
  }
  if (*client->connack_ != 0) {
    return absl::UnavailableError(absl::StrCat("the broker refused the connection: ",
                                               mosquitto_reason_string(*client->connack_)));
  }
  return client;
}

MqttTestClient::~MqttTestClient() {
  mosquitto_disconnect(mosq_);
  mosquitto_loop_stop(mosq_, false);
  mosquitto_destroy(mosq_);
}

void MqttTestClient::OnConnect(mosquitto* mosq, void* self_ptr, int reason, int /*flags*/,
                               const mosquitto_property* /*props*/) {
  auto* self = static_cast<MqttTestClient*>(self_ptr);
  absl::MutexLock lock(&self->mu_);
  const bool reconnect = self->connack_.has_value();
  self->connack_ = reason;
  self->connected_ = reason == 0;
  if (reason == 0 && reconnect && self->options_.reconnect) {
    for (const auto& [filter, qos] : self->filters_) {
      mosquitto_subscribe_v5(mosq, nullptr, filter.c_str(), qos, 0, nullptr);
    }
  }
}

void MqttTestClient::OnSubscribe(mosquitto* /*mosq*/, void* self_ptr, int mid, int count,
                                 const int* granted, const mosquitto_property* /*props*/) {
  auto* self = static_cast<MqttTestClient*>(self_ptr);
  absl::MutexLock lock(&self->mu_);
  self->subacks_[mid] = std::vector<int>(granted, granted + count);
  ++self->subacks_seen_;
}

void MqttTestClient::OnMessageCallback(mosquitto* /*mosq*/, void* self_ptr,
                                       const mosquitto_message* message,
                                       const mosquitto_property* props) {
  auto* self = static_cast<MqttTestClient*>(self_ptr);
  MqttReceived received{message->topic == nullptr ? "" : message->topic,
                        FromMosquittoMessage(*message, props)};
  std::function<void(MqttReceived)> handler;
  {
    absl::MutexLock lock(&self->mu_);
    if (!self->handler_) {
      self->received_.push_back(std::move(received));
      return;
    }
    handler = self->handler_;
  }
  handler(std::move(received));
}

void MqttTestClient::OnPublish(mosquitto* /*mosq*/, void* self_ptr, int mid, int reason_code,
                               const mosquitto_property* /*props*/) {
  auto* self = static_cast<MqttTestClient*>(self_ptr);
  absl::MutexLock lock(&self->mu_);
  self->pubacks_[mid] = reason_code;
  ++self->pubacks_seen_;
}

void MqttTestClient::OnDisconnect(mosquitto* mosq, void* self_ptr, int /*reason*/,
                                  const mosquitto_property* /*props*/) {
  auto* self = static_cast<MqttTestClient*>(self_ptr);
  absl::MutexLock lock(&self->mu_);
  self->connected_ = false;
  if (!self->options_.reconnect) {
    mosquitto_disconnect(mosq);  // libmosquitto's loop would reconnect otherwise
  }
}

std::vector<int> MqttTestClient::Subscribe(const std::string& filter, int qos,
                                           std::chrono::milliseconds timeout) {
  int mid = 0;
  {
    absl::MutexLock lock(&mu_);
    filters_.emplace_back(filter, qos);
  }
  if (mosquitto_subscribe_v5(mosq_, &mid, filter.c_str(), qos, 0, nullptr) != MOSQ_ERR_SUCCESS) {
    return {};
  }
  absl::MutexLock lock(&mu_);
  auto arrived = [this, mid]()
                     ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return subacks_.contains(mid); };
  mu_.AwaitWithTimeout(absl::Condition(&arrived), absl::FromChrono(timeout));
  return subacks_.contains(mid) ? subacks_[mid] : std::vector<int>{};
}

int MqttTestClient::Publish(const std::string& topic, const cloudevents::MqttMessage& message,
                            int qos, std::chrono::milliseconds timeout) {
  auto props = ToMosquittoProperties(message);
  if (!props.ok()) {
    return -1;
  }
  int mid = 0;
  if (mosquitto_publish_v5(mosq_, &mid, topic.c_str(), static_cast<int>(message.payload.size()),
                           message.payload.data(), qos, false, props->get()) != MOSQ_ERR_SUCCESS) {
    return -1;
  }
  absl::MutexLock lock(&mu_);
  auto arrived = [this, mid]()
                     ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return pubacks_.contains(mid); };
  mu_.AwaitWithTimeout(absl::Condition(&arrived), absl::FromChrono(timeout));
  return pubacks_.contains(mid) ? pubacks_[mid] : -1;
}

bool MqttTestClient::PublishNoWait(const std::string& topic,
                                   const cloudevents::MqttMessage& message, int qos) {
  auto props = ToMosquittoProperties(message);
  return props.ok() && mosquitto_publish_v5(
                           mosq_, nullptr, topic.c_str(), static_cast<int>(message.payload.size()),
                           message.payload.data(), qos, false, props->get()) == MOSQ_ERR_SUCCESS;
}

bool MqttTestClient::AwaitPubacks(std::size_t count, std::chrono::milliseconds timeout) {
  absl::MutexLock lock(&mu_);
  auto arrived = [this, count]()
                     ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return pubacks_seen_ >= count; };
  return mu_.AwaitWithTimeout(absl::Condition(&arrived), absl::FromChrono(timeout));
}

std::optional<MqttReceived> MqttTestClient::Next(std::chrono::milliseconds timeout) {
  absl::MutexLock lock(&mu_);
  auto arrived = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !received_.empty(); };
  mu_.AwaitWithTimeout(absl::Condition(&arrived), absl::FromChrono(timeout));
  if (received_.empty()) {
    return std::nullopt;
  }
  MqttReceived next = std::move(received_.front());
  received_.pop_front();
  return next;
}

std::vector<MqttReceived> MqttTestClient::Drain() {
  absl::MutexLock lock(&mu_);
  std::vector<MqttReceived> out(std::make_move_iterator(received_.begin()),
                                std::make_move_iterator(received_.end()));
  received_.clear();
  return out;
}

void MqttTestClient::OnMessage(std::function<void(MqttReceived)> handler) {
  absl::MutexLock lock(&mu_);
  handler_ = std::move(handler);
}

int MqttTestClient::subacks() const {
  absl::MutexLock lock(&mu_);
  return subacks_seen_;
}

bool MqttTestClient::connected() const {
  absl::MutexLock lock(&mu_);
  return connected_;
}

}  // namespace mmi::transport::testing
