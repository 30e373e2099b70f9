#include "tools/fleet-sim/mqtt_agent_transport.h"

#include <mosquitto.h>
#include <mqtt_protocol.h>

#include <algorithm>
#include <mutex>
#include <regex>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "libs/cloudevents/mqtt_codec.h"
#include "libs/common/log.h"
#include "libs/transport/client_id.h"
#include "libs/transport/mqtt/mosquitto_message.h"

namespace mmi::fleet_sim {
namespace {

const log::Logger& Log() {
  static const log::Logger logger("fleet_sim.mqtt");
  return logger;
}

}  // namespace

absl::Status ValidateMqttAgentSettings(const MqttAgentSettings& settings) {
  static const std::regex kSegment("^[a-z0-9-]+$");
  static const std::regex kHostPort("^[^:/ ]+:[0-9]+$");
  if (!std::regex_match(settings.broker_host, kHostPort)) {
    return absl::InvalidArgumentError(
        absl::StrCat("mqtt.brokerHost: must be host:port, got \"", settings.broker_host, "\""));
  }
  if (!std::regex_match(settings.source_id, kSegment)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mqtt.sourceId: must match [a-z0-9-]+ (§3.2), got \"", settings.source_id, "\""));
  }
  if (settings.qos < 0 || settings.qos > 1) {
    return absl::InvalidArgumentError("mqtt.qos: must be 0 or 1");
  }
  const MqttAgentSettings resolved = ResolvedMqttAgentSettings(settings);
  if (resolved.source_events.find('+') == std::string::npos) {
    return absl::InvalidArgumentError(
        "mqtt.sourceEvents: must contain `+` for the cluster segment");
  }
  if (resolved.agent_events.find('+') == std::string::npos) {
    return absl::InvalidArgumentError("mqtt.agentEvents: must contain `+` for the cluster segment");
  }
  if (!settings.client_cert_file.empty() && settings.client_key_file.empty()) {
    return absl::InvalidArgumentError("mqtt.clientKeyFile: required with clientCertFile");
  }
  return absl::OkStatus();
}

MqttAgentSettings ResolvedMqttAgentSettings(MqttAgentSettings settings) {
  if (settings.source_events.empty()) {
    settings.source_events =
        absl::StrCat("sources/", settings.source_id, "/consumers/+/sourceevents");
  }
  if (settings.agent_events.empty()) {
    settings.agent_events =
        absl::StrCat("sources/", settings.source_id, "/consumers/+/agentevents");
  }
  if (settings.source_broadcast.empty()) {
    settings.source_broadcast = absl::StrCat("sources/", settings.source_id, "/sourcebroadcast");
  }
  if (settings.client_id.empty()) {
    settings.client_id = absl::StrCat("fleet-sim-", transport::RandomHex(8));
  }
  return settings;
}

std::string ClusterFromTopic(const std::string& filter, const std::string& topic) {
  std::vector<std::string> f = absl::StrSplit(filter, '/');
  // A `$share/<group>/` prefix is not part of the received topic.
  if (!f.empty() && f.front() == "$share" && f.size() > 2) {
    f.erase(f.begin(), f.begin() + 2);
  }
  std::vector<std::string> t = absl::StrSplit(topic, '/');
  if (f.size() != t.size()) {
    return "";
  }
  int cluster_index = -1;
  for (std::size_t i = 0; i < f.size(); ++i) {
    if (f[i] == "+") {
      cluster_index = static_cast<int>(i);
    } else if (f[i] != t[i]) {
      return "";
    }
  }
  return cluster_index < 0 ? std::string() : t[cluster_index];
}

std::string AgentEventsTopic(const std::string& pattern, const std::string& cluster,
                             const std::string& source_id) {
  std::string topic = pattern;
  const auto last = topic.rfind('+');
  if (last != std::string::npos) {
    topic.replace(last, 1, cluster);
  }
  // Remaining `+` (a source segment left open) become the source id. Search only before the
  // cluster we just inserted, so a cluster name is never rewritten.
  std::size_t limit = last == std::string::npos ? topic.size() : last;
  for (std::size_t pos = topic.find('+'); pos != std::string::npos && pos < limit;
       pos = topic.find('+', pos + source_id.size())) {
    topic.replace(pos, 1, source_id);
    limit += source_id.size() - 1;
  }
  return topic;
}

MqttAgentTransport::MqttAgentTransport(MqttAgentSettings settings)
    : settings_(ResolvedMqttAgentSettings(std::move(settings))) {}

MqttAgentTransport::~MqttAgentTransport() { Stop(); }

absl::Status MqttAgentTransport::Configure() {
  static std::once_flag init;
  std::call_once(init, [] { mosquitto_lib_init(); });
  mosq_ = mosquitto_new(settings_.client_id.c_str(), /*clean_session=*/true, this);
  if (mosq_ == nullptr) {
    return absl::ResourceExhaustedError("mqtt: cannot create a libmosquitto client");
  }
  auto check = [](int rc, const char* what) {
    return rc == MOSQ_ERR_SUCCESS ? absl::OkStatus()
                                  : absl::InvalidArgumentError(
                                        absl::StrCat("mqtt: ", what, ": ", mosquitto_strerror(rc)));
  };
  absl::Status status =
      check(mosquitto_int_option(mosq_, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V5), "MQTT 5");
  if (status.ok() && !settings_.username.empty()) {
    status = check(mosquitto_username_pw_set(
                       mosq_, settings_.username.c_str(),
                       settings_.password.empty() ? nullptr : settings_.password.c_str()),
                   "username");
  }
  if (status.ok() && settings_.tls) {
    const bool own_ca = !settings_.ca_file.empty();
    if (!own_ca) {
      (void)mosquitto_int_option(mosq_, MOSQ_OPT_TLS_USE_OS_CERTS, 1);
    }
    if (own_ca || !settings_.client_cert_file.empty()) {
      status = check(
          mosquitto_tls_set(
              mosq_, own_ca ? settings_.ca_file.c_str() : nullptr,
              own_ca ? nullptr : "/etc/ssl/certs",
              settings_.client_cert_file.empty() ? nullptr : settings_.client_cert_file.c_str(),
              settings_.client_key_file.empty() ? nullptr : settings_.client_key_file.c_str(),
              nullptr),
          "tls");
    }
  }
  if (!status.ok()) {
    return status;
  }
  (void)mosquitto_int_option(mosq_, MOSQ_OPT_TCP_NODELAY, 1);
  const auto seconds = [](std::chrono::milliseconds d) {
    return static_cast<unsigned>(std::max<int64_t>(1, (d.count() + 999) / 1000));
  };
  mosquitto_reconnect_delay_set(mosq_, seconds(settings_.reconnect_min),
                                seconds(settings_.reconnect_max), /*exponential=*/true);
  mosquitto_connect_v5_callback_set(mosq_, &MqttAgentTransport::OnConnect);
  mosquitto_subscribe_v5_callback_set(mosq_, &MqttAgentTransport::OnSubscribe);
  mosquitto_message_v5_callback_set(mosq_, &MqttAgentTransport::OnMessage);
  mosquitto_publish_v5_callback_set(mosq_, &MqttAgentTransport::OnPublish);
  mosquitto_disconnect_v5_callback_set(mosq_, &MqttAgentTransport::OnDisconnect);
  return absl::OkStatus();
}

absl::Status MqttAgentTransport::Start(ReceiveHandler on_receive, SubscribedHandler on_subscribed) {
  if (absl::Status status = ValidateMqttAgentSettings(settings_); !status.ok()) {
    return status;
  }
  filters_ = {settings_.source_events};
  if (settings_.source_broadcast != "-") {
    filters_.push_back(settings_.source_broadcast);
  }
  if (absl::Status status = Configure(); !status.ok()) {
    return status;
  }
  {
    absl::MutexLock lock(&mu_);
    on_receive_ = std::move(on_receive);
    on_subscribed_ = std::move(on_subscribed);
  }
  const auto colon = settings_.broker_host.rfind(':');
  const std::string host = settings_.broker_host.substr(0, colon);
  const int port = std::stoi(settings_.broker_host.substr(colon + 1));
  Log().Info("starting", {{"broker", settings_.broker_host},
                          {"client_id", settings_.client_id},
                          {"source_events", settings_.source_events},
                          {"agent_events", settings_.agent_events}});
  // Asynchronous: a broker that is down now is retried by libmosquitto's thread.
  const int rc = mosquitto_connect_async(mosq_, host.c_str(), port,
                                         static_cast<int>(settings_.keep_alive.count()));
  if (rc != MOSQ_ERR_SUCCESS && rc != MOSQ_ERR_ERRNO && rc != MOSQ_ERR_EAI) {
    return absl::InvalidArgumentError(absl::StrCat("mqtt: connect: ", mosquitto_strerror(rc)));
  }
  if (mosquitto_loop_start(mosq_) != MOSQ_ERR_SUCCESS) {
    return absl::ResourceExhaustedError("mqtt: cannot start libmosquitto's thread");
  }
  return absl::OkStatus();
}

void MqttAgentTransport::OnConnect(mosquitto* mosq, void* self_ptr, int reason, int /*flags*/,
                                   const mosquitto_property* /*props*/) {
  auto* self = static_cast<MqttAgentTransport*>(self_ptr);
  if (reason != 0) {
    Log().Warn("connect refused", {{"broker", self->settings_.broker_host},
                                   {"reason", mosquitto_reason_string(reason)}});
    return;
  }
  std::vector<char*> filters;
  for (const std::string& filter : self->filters_) {
    filters.push_back(const_cast<char*>(filter.c_str()));
  }
  int mid = 0;
  const int rc = mosquitto_subscribe_multiple(mosq, &mid, static_cast<int>(filters.size()),
                                              filters.data(), self->settings_.qos, 0, nullptr);
  absl::MutexLock lock(&self->mu_);
  self->subscribe_mid_ = rc == MOSQ_ERR_SUCCESS ? mid : -1;
}

void MqttAgentTransport::OnSubscribe(mosquitto* mosq, void* self_ptr, int mid, int count,
                                     const int* granted, const mosquitto_property* /*props*/) {
  auto* self = static_cast<MqttAgentTransport*>(self_ptr);
  for (int i = 0; i < count; ++i) {
    if (granted[i] >= 0x80) {
      Log().Warn("subscription refused", {{"filter", self->filters_[i]}, {"code", granted[i]}});
      (void)mosquitto_disconnect(mosq);  // and try again after the reconnect delay
      return;
    }
  }
  absl::MutexLock lock(&self->mu_);
  if (mid != self->subscribe_mid_ || self->stopped_) {
    return;
  }
  self->connected_ = true;
  const bool reconnect = self->ever_subscribed_;
  self->ever_subscribed_ = true;
  Log().Info(reconnect ? "reconnected and subscribed" : "connected and subscribed",
             {{"broker", self->settings_.broker_host}});
  if (self->on_subscribed_) {
    self->on_subscribed_(Subscription{.reconnect = reconnect, .clusters = {}});
  }
}

void MqttAgentTransport::OnMessage(mosquitto* /*mosq*/, void* self_ptr,
                                   const mosquitto_message* message,
                                   const mosquitto_property* props) {
  auto* self = static_cast<MqttAgentTransport*>(self_ptr);
  if (message == nullptr || message->topic == nullptr) {
    return;
  }
  std::string cluster;
  for (const std::string& filter : self->filters_) {
    cluster = ClusterFromTopic(filter, message->topic);
    if (!cluster.empty()) {
      break;
    }
  }
  ReceivedEvent received{std::move(cluster),
                         cloudevents::DecodeMqtt(transport::FromMosquittoMessage(*message, props),
                                                 self->settings_.limits)};
  absl::MutexLock lock(&self->mu_);
  if (!self->stopped_ && self->on_receive_) {
    self->on_receive_(std::move(received));
  }
}

void MqttAgentTransport::OnPublish(mosquitto* /*mosq*/, void* self_ptr, int mid, int reason_code,
                                   const mosquitto_property* /*props*/) {
  static_cast<MqttAgentTransport*>(self_ptr)->Settle(
      mid, reason_code < 0x80
               ? absl::OkStatus()
               : absl::UnavailableError(absl::StrCat("mqtt: PUBACK reason code ", reason_code)));
}

void MqttAgentTransport::OnDisconnect(mosquitto* /*mosq*/, void* self_ptr, int reason,
                                      const mosquitto_property* /*props*/) {
  auto* self = static_cast<MqttAgentTransport*>(self_ptr);
  self->connected_ = false;
  {
    absl::MutexLock lock(&self->mu_);
    if (self->stopped_) {
      return;
    }
  }
  Log().Warn("connection lost", {{"broker", self->settings_.broker_host}, {"reason", reason}});
  // The simulator retries what failed; a PUBACK that still comes for one settles nothing.
  self->FailPending("mqtt: connection lost before PUBACK");
}

void MqttAgentTransport::Settle(int mid, absl::Status status) {
  PublishDone done;
  {
    absl::MutexLock lock(&pending_mu_);
    auto it = pending_.find(mid);
    if (it == pending_.end()) {
      settled_early_.emplace(mid, std::move(status));
      return;
    }
    done = std::move(it->second);
    pending_.erase(it);
  }
  std::move(done)(std::move(status));
}

void MqttAgentTransport::FailPending(const char* why) {
  std::unordered_map<int, PublishDone> failed;
  {
    absl::MutexLock lock(&pending_mu_);
    failed.swap(pending_);
    settled_early_.clear();
  }
  for (auto& [mid, done] : failed) {
    std::move(done)(absl::UnavailableError(why));
  }
}

void MqttAgentTransport::Publish(cloudevents::Event event, PublishDone done) {
  auto cluster = event.ClusterName();
  if (!cluster.ok() || cluster->empty()) {
    std::move(done)(absl::InvalidArgumentError("agent event without a clustername"));
    return;
  }
  auto encoded =
      cloudevents::EncodeMqtt(event, cloudevents::MqttContentMode::kBinary, settings_.limits);
  if (!encoded.ok()) {
    std::move(done)(encoded.status());
    return;
  }
  auto props = transport::ToMosquittoProperties(*encoded);
  if (!props.ok()) {
    std::move(done)(props.status());
    return;
  }
  if (!connected_) {
    std::move(done)(absl::UnavailableError("mqtt: not connected"));
    return;
  }
  if (settings_.max_in_flight > 0) {
    // Backpressure on the simulator's loop (its intake queues what arrives meanwhile).
    absl::MutexLock lock(&pending_mu_);
    pending_mu_.AwaitWithTimeout(
        absl::Condition(
            +[](MqttAgentTransport* self) ABSL_EXCLUSIVE_LOCKS_REQUIRED(self->pending_mu_) {
              return self->pending_.size() < self->settings_.max_in_flight;
            },
            this),
        absl::FromChrono(settings_.max_in_flight_wait));
  }
  const std::string topic = AgentEventsTopic(settings_.agent_events, *cluster, settings_.source_id);
  int mid = 0;
  const int rc =
      mosquitto_publish_v5(mosq_, &mid, topic.c_str(), static_cast<int>(encoded->payload.size()),
                           encoded->payload.data(), settings_.qos, false, props->get());
  if (rc != MOSQ_ERR_SUCCESS) {
    std::move(done)(
        absl::UnavailableError(absl::StrCat("mqtt: publish failed: ", mosquitto_strerror(rc))));
    return;
  }
  absl::Status early;
  {
    absl::MutexLock lock(&pending_mu_);
    auto it = settled_early_.find(mid);
    if (it == settled_early_.end()) {
      pending_.emplace(mid, std::move(done));
      return;
    }
    early = std::move(it->second);
    settled_early_.erase(it);
  }
  std::move(done)(std::move(early));  // its PUBACK came before we knew its id
}

std::size_t MqttAgentTransport::InFlight() const {
  absl::MutexLock lock(&pending_mu_);
  return pending_.size();
}

void MqttAgentTransport::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) {
      return;
    }
    stopped_ = true;
  }
  connected_ = false;
  if (mosq_ != nullptr) {
    (void)mosquitto_disconnect(mosq_);
    (void)mosquitto_loop_stop(mosq_, /*force=*/false);
    mosquitto_destroy(mosq_);  // no callback runs after this
    mosq_ = nullptr;
  }
  // Publishes never settled fail now, while whoever gave them still exists: no handler runs
  // after Stop() returns.
  FailPending("mqtt: transport stopped before PUBACK");
}

}  // namespace mmi::fleet_sim
