#include "tools/fleet-sim/mqtt_agent_transport.h"

#include <pthread.h>

#include <algorithm>
#include <regex>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "libs/cloudevents/mqtt_codec.h"
#include "libs/common/log.h"
#include "libs/transport/client_id.h"
#include "libs/transport/mqtt/paho_message.h"

namespace mmi::fleet_sim {
namespace {

const log::Logger& Log() {
  static const log::Logger logger("fleet_sim.mqtt");
  return logger;
}

}  // namespace

// One in-flight publish: Paho keeps only a reference to its listener, so the transport owns it
// until Paho reports the outcome (or until the client is gone, see the destructor).
class MqttAgentTransport::PendingPublish final : public mqtt::iaction_listener {
 public:
  PendingPublish(MqttAgentTransport* owner, PublishDone done)
      : owner_(owner), done_(std::move(done)) {}
  void on_success(const mqtt::token& /*token*/) override { Finish(absl::OkStatus()); }
  void on_failure(const mqtt::token& token) override {
    Finish(absl::UnavailableError(
        absl::StrCat("mqtt: no PUBACK (return code ", token.get_return_code(), ")")));
  }
  // Runs the callback once and releases this object.
  void Finish(absl::Status status) {
    PublishDone done = std::move(done_);
    owner_->Forget(this);  // deletes *this
    if (done) {
      std::move(done)(std::move(status));
    }
  }

 private:
  MqttAgentTransport* owner_;
  PublishDone done_;
};

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

MqttAgentTransport::~MqttAgentTransport() {
  Stop();
  FailPending("mqtt: transport destroyed before PUBACK");  // those of a never-started client
}

void MqttAgentTransport::FailPending(const char* why) {
  while (true) {
    PendingPublish* next = nullptr;
    {
      absl::MutexLock lock(&pending_mu_);
      if (pending_.empty()) {
        break;
      }
      next = pending_.begin()->first;
    }
    next->Finish(absl::UnavailableError(why));
  }
}

void MqttAgentTransport::Forget(PendingPublish* pending) {
  std::unique_ptr<PendingPublish> owned;
  {
    absl::MutexLock lock(&pending_mu_);
    auto it = pending_.find(pending);
    if (it == pending_.end()) {
      return;
    }
    owned = std::move(it->second);
    pending_.erase(it);
  }
  // `owned` (the caller itself) is destroyed here; the caller touches no member afterwards.
}

absl::Status MqttAgentTransport::Start(ReceiveHandler on_receive, SubscribedHandler on_subscribed) {
  if (absl::Status status = ValidateMqttAgentSettings(settings_); !status.ok()) {
    return status;
  }
  filters_ = {settings_.source_events};
  if (settings_.source_broadcast != "-") {
    filters_.push_back(settings_.source_broadcast);
  }
  auto builder = mqtt::connect_options_builder()
                     .mqtt_version(MQTTVERSION_5)
                     .clean_start(true)
                     .keep_alive_interval(settings_.keep_alive)
                     .connect_timeout(settings_.connect_timeout)
                     .automatic_reconnect(false);
  if (!settings_.username.empty()) {
    builder.user_name(settings_.username);
    builder.password(settings_.password);
  }
  if (settings_.tls) {
    mqtt::ssl_options_builder ssl;
    if (!settings_.ca_file.empty()) {
      ssl.trust_store(settings_.ca_file);
    }
    if (!settings_.client_cert_file.empty()) {
      ssl.key_store(settings_.client_cert_file);
      ssl.private_key(settings_.client_key_file);
    }
    ssl.enable_server_cert_auth(true);
    builder.ssl(ssl.finalize());
  }
  options_ = builder.finalize();
  const std::string uri = absl::StrCat(settings_.tls ? "ssl://" : "tcp://", settings_.broker_host);
  try {
    // Paho refuses publishes beyond 100 pending by default; one process speaks for thousands of
    // agents, so allow a cold start's worth in flight (failures are retried by the simulator).
    constexpr int kMaxPendingPublishes = 100'000;
    client_ = std::make_unique<mqtt::async_client>(
        uri, settings_.client_id, mqtt::create_options(MQTTVERSION_5, kMaxPendingPublishes));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("mqtt: cannot create client: ", e.what()));
  }
  {
    absl::MutexLock lock(&mu_);
    on_receive_ = std::move(on_receive);
    on_subscribed_ = std::move(on_subscribed);
  }
  client_->set_message_callback([this](mqtt::const_message_ptr message) { OnMessage(message); });
  client_->set_connection_lost_handler([this](const std::string& /*cause*/) {
    connected_ = false;
    absl::MutexLock lock(&mu_);
    lost_ = true;
  });
  Log().Info("starting", {{"broker", settings_.broker_host},
                          {"client_id", settings_.client_id},
                          {"source_events", settings_.source_events},
                          {"agent_events", settings_.agent_events}});
  thread_ = std::thread([this] { Loop(); });
  return absl::OkStatus();
}

void MqttAgentTransport::OnMessage(const mqtt::const_message_ptr& message) {
  if (message == nullptr) {
    return;
  }
  std::string cluster;
  for (const std::string& filter : filters_) {
    cluster = ClusterFromTopic(filter, message->get_topic());
    if (!cluster.empty()) {
      break;
    }
  }
  ReceivedEvent received{
      std::move(cluster),
      cloudevents::DecodeMqtt(transport::FromPahoMessage(*message), settings_.limits)};
  absl::MutexLock lock(&mu_);
  if (!stopped_ && on_receive_) {
    on_receive_(std::move(received));
  }
}

bool MqttAgentTransport::ConnectAndSubscribe() {
  try {
    auto token = client_->connect(options_);
    if (!token->wait_for(settings_.connect_timeout + std::chrono::seconds(1))) {
      return false;
    }
    for (const std::string& filter : filters_) {
      if (!client_->subscribe(filter, settings_.qos)->wait_for(settings_.connect_timeout)) {
        client_->disconnect()->wait_for(std::chrono::seconds(1));
        return false;
      }
    }
  } catch (const std::exception& e) {
    Log().Warn("connect failed", {{"broker", settings_.broker_host}, {"error", e.what()}});
    try {
      if (client_->is_connected()) {
        client_->disconnect()->wait_for(std::chrono::seconds(1));
      }
    } catch (const std::exception&) {
      // Already down.
    }
    return false;
  }
  return true;
}

void MqttAgentTransport::Loop() {
  pthread_setname_np(pthread_self(), "fleet-mqtt");
  bool ever = false;
  auto delay = settings_.reconnect_min;
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      if (stopped_) {
        return;
      }
      lost_ = false;
    }
    if (ConnectAndSubscribe()) {
      connected_ = true;
      delay = settings_.reconnect_min;
      Log().Info(ever ? "reconnected and subscribed" : "connected and subscribed",
                 {{"broker", settings_.broker_host}});
      {
        absl::MutexLock lock(&mu_);
        if (!stopped_ && on_subscribed_) {
          on_subscribed_(Subscription{.reconnect = ever, .clusters = {}});
        }
      }
      ever = true;
      // Wait until the connection drops or we stop.
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](MqttAgentTransport* self)
               ABSL_EXCLUSIVE_LOCKS_REQUIRED(self->mu_) { return self->stopped_ || self->lost_; },
          this));
      if (stopped_) {
        return;
      }
      Log().Warn("connection lost", {{"broker", settings_.broker_host}});
      continue;
    }
    // Back off (interruptible by Stop()).
    {
      absl::MutexLock lock(&mu_);
      mu_.AwaitWithTimeout(absl::Condition(&stopped_), absl::FromChrono(delay));
      if (stopped_) {
        return;
      }
    }
    delay = std::min(settings_.reconnect_max, delay * 2);
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
  absl::ReaderMutexLock client_lock(&client_mu_);
  if (!connected_ || client_ == nullptr) {
    std::move(done)(absl::UnavailableError("mqtt: not connected"));
    return;
  }
  const std::string topic = AgentEventsTopic(settings_.agent_events, *cluster, settings_.source_id);
  auto owned = std::make_unique<PendingPublish>(this, std::move(done));
  PendingPublish* listener = owned.get();
  {
    absl::MutexLock lock(&pending_mu_);
    if (settings_.max_in_flight > 0) {
      // Backpressure on the simulator's loop (its intake queues what arrives meanwhile).
      pending_mu_.AwaitWithTimeout(
          absl::Condition(
              +[](MqttAgentTransport* self) ABSL_EXCLUSIVE_LOCKS_REQUIRED(self->pending_mu_) {
                return self->pending_.size() < self->settings_.max_in_flight;
              },
              this),
          absl::FromChrono(settings_.max_in_flight_wait));
    }
    pending_.emplace(listener, std::move(owned));
  }
  try {
    client_->publish(transport::ToPahoMessage(topic, settings_.qos, *encoded), nullptr, *listener);
  } catch (const std::exception& e) {
    listener->Finish(absl::UnavailableError(absl::StrCat("mqtt: publish failed: ", e.what())));
  }
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
  if (thread_.joinable()) {
    thread_.join();
  }
  connected_ = false;
  {
    absl::WriterMutexLock client_lock(&client_mu_);
    if (client_ != nullptr) {
      try {
        if (client_->is_connected()) {
          client_->disconnect()->wait_for(std::chrono::seconds(2));
        }
      } catch (const std::exception&) {
        // Shutting down anyway.
      }
      // Destroying the client ends every Paho callback.
      client_.reset();
    }
  }
  // Publishes Paho never settled fail now, while whoever gave them still exists: no handler
  // runs after Stop() returns (a simulator destroyed before its transport used to get up to
  // 100,000 callbacks into freed memory, a heap corruption at the end of a cold start).
  FailPending("mqtt: transport stopped before PUBACK");
}

}  // namespace mmi::fleet_sim
