#include "tools/fleet-sim/kafka_agent_transport.h"

#include <pthread.h>

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "libs/cloudevents/kafka_codec.h"
#include "libs/common/log.h"
#include "libs/transport/client_id.h"
#include "libs/transport/kafka/kafka_record.h"

namespace mmi::fleet_sim {
namespace {

const log::Logger& Log() {
  static const log::Logger logger("fleet_sim.kafka");
  return logger;
}

absl::Status Set(RdKafka::Conf& conf, const std::string& name, const std::string& value) {
  std::string error;
  if (conf.set(name, value, error) != RdKafka::Conf::CONF_OK) {
    return absl::InvalidArgumentError(absl::StrCat("kafka: ", name, ": ", error));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateKafkaAgentSettings(const KafkaAgentSettings& settings) {
  if (settings.bootstrap_servers.empty()) {
    return absl::InvalidArgumentError("kafka.bootstrapServers: required (host:port[,...])");
  }
  if (settings.auto_offset_reset != "earliest" && settings.auto_offset_reset != "latest") {
    return absl::InvalidArgumentError("kafka.autoOffsetReset: earliest or latest");
  }
  if (settings.source_events_topic.empty() || settings.agent_events_topic.empty()) {
    return absl::InvalidArgumentError("kafka topics: must not be empty");
  }
  return absl::OkStatus();
}

void KafkaAgentTransport::Callbacks::dr_cb(RdKafka::Message& message) {
  std::unique_ptr<PublishDone> done(static_cast<PublishDone*>(message.msg_opaque()));
  if (done == nullptr || !*done) {
    return;
  }
  if (message.err() == RdKafka::ERR_NO_ERROR) {
    std::move (*done)(absl::OkStatus());
  } else {
    std::move (*done)(absl::UnavailableError(absl::StrCat("kafka: ", message.errstr())));
  }
}

void KafkaAgentTransport::Callbacks::rebalance_cb(
    RdKafka::KafkaConsumer* consumer, RdKafka::ErrorCode err,
    std::vector<RdKafka::TopicPartition*>& partitions) {
  if (err == RdKafka::ERR__ASSIGN_PARTITIONS) {
    consumer->assign(partitions);
    owner_->connected_ = true;
    const bool reconnect = owner_->ever_assigned_;
    owner_->ever_assigned_ = true;
    Log().Info("partitions assigned", {{"partitions", static_cast<int64_t>(partitions.size())}});
    absl::MutexLock lock(&owner_->mu_);
    if (!owner_->stopped_ && owner_->on_subscribed_) {
      owner_->on_subscribed_(Subscription{.reconnect = reconnect, .clusters = {}});
    }
  } else {
    consumer->unassign();
  }
}

void KafkaAgentTransport::Callbacks::event_cb(RdKafka::Event& event) {
  if (event.type() == RdKafka::Event::EVENT_ERROR) {
    if (event.err() == RdKafka::ERR__ALL_BROKERS_DOWN) {
      owner_->connected_ = false;
    }
    Log().Warn("kafka error", {{"error", event.str()}});
  }
}

KafkaAgentTransport::KafkaAgentTransport(KafkaAgentSettings settings)
    : settings_(std::move(settings)) {
  if (settings_.group_id.empty()) {
    settings_.group_id = absl::StrCat("fleet-sim-", transport::RandomHex(8));
  }
}

KafkaAgentTransport::~KafkaAgentTransport() { Stop(); }

absl::Status KafkaAgentTransport::Start(ReceiveHandler on_receive,
                                        SubscribedHandler on_subscribed) {
  if (absl::Status status = ValidateKafkaAgentSettings(settings_); !status.ok()) {
    return status;
  }
  std::unique_ptr<RdKafka::Conf> consumer_conf(RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
  std::unique_ptr<RdKafka::Conf> producer_conf(RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
  for (auto* conf : {consumer_conf.get(), producer_conf.get()}) {
    if (absl::Status s = Set(*conf, "bootstrap.servers", settings_.bootstrap_servers); !s.ok()) {
      return s;
    }
    std::string error;
    conf->set("event_cb", static_cast<RdKafka::EventCb*>(&callbacks_), error);
  }
  for (const auto& [name, value] : std::vector<std::pair<std::string, std::string>>{
           {"group.id", settings_.group_id},
           {"client.id", absl::StrCat(settings_.group_id, "-sub")},
           {"auto.offset.reset", settings_.auto_offset_reset},
           {"enable.auto.commit", "true"}}) {
    if (absl::Status s = Set(*consumer_conf, name, value); !s.ok()) {
      return s;
    }
  }
  for (const auto& [name, value] : std::vector<std::pair<std::string, std::string>>{
           {"client.id", absl::StrCat(settings_.group_id, "-pub")},
           {"acks", "all"},
           {"message.timeout.ms", std::to_string(settings_.delivery_timeout.count())}}) {
    if (absl::Status s = Set(*producer_conf, name, value); !s.ok()) {
      return s;
    }
  }
  for (auto* conf : {consumer_conf.get(), producer_conf.get()}) {
    for (const auto& [name, value] : settings_.advanced_config) {
      if (absl::Status s = Set(*conf, name, value); !s.ok()) {
        return s;
      }
    }
  }
  std::string error;
  consumer_conf->set("rebalance_cb", static_cast<RdKafka::RebalanceCb*>(&callbacks_), error);
  producer_conf->set("dr_cb", static_cast<RdKafka::DeliveryReportCb*>(&callbacks_), error);
  consumer_.reset(RdKafka::KafkaConsumer::create(consumer_conf.get(), error));
  if (consumer_ == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("kafka: cannot create the consumer: ", error));
  }
  producer_.reset(RdKafka::Producer::create(producer_conf.get(), error));
  if (producer_ == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("kafka: cannot create the producer: ", error));
  }
  if (RdKafka::ErrorCode code = consumer_->subscribe({settings_.source_events_topic});
      code != RdKafka::ERR_NO_ERROR) {
    return absl::UnavailableError(absl::StrCat("kafka: subscribe ", settings_.source_events_topic,
                                               ": ", RdKafka::err2str(code)));
  }
  {
    absl::MutexLock lock(&mu_);
    on_receive_ = std::move(on_receive);
    on_subscribed_ = std::move(on_subscribed);
  }
  running_ = true;
  thread_ = std::thread([this] { Loop(); });
  Log().Info("started", {{"bootstrap", settings_.bootstrap_servers},
                         {"group", settings_.group_id},
                         {"consume", settings_.source_events_topic},
                         {"produce", settings_.agent_events_topic}});
  return absl::OkStatus();
}

void KafkaAgentTransport::Loop() {
  pthread_setname_np(pthread_self(), "fleet-kafka");
  while (running_) {
    std::unique_ptr<RdKafka::Message> message(consumer_->consume(100));
    producer_->poll(0);
    if (message == nullptr) {
      continue;
    }
    if (message->err() == RdKafka::ERR__TIMED_OUT ||
        message->err() == RdKafka::ERR__PARTITION_EOF) {
      continue;
    }
    if (message->err() != RdKafka::ERR_NO_ERROR) {
      Log().Warn("consume error", {{"error", message->errstr()}});
      continue;
    }
    ReceivedEvent received{
        "", cloudevents::DecodeKafka(transport::ToKafkaRecord(*message), settings_.limits)};
    absl::MutexLock lock(&mu_);
    if (!stopped_ && on_receive_) {
      on_receive_(std::move(received));
    }
  }
}

void KafkaAgentTransport::Publish(cloudevents::Event event, PublishDone done) {
  auto record = cloudevents::EncodeKafka(event, settings_.limits);
  if (!record.ok()) {
    std::move(done)(record.status());
    return;
  }
  if (producer_ == nullptr || !running_) {
    std::move(done)(absl::UnavailableError("kafka: not started"));
    return;
  }
  RdKafka::Headers* headers = RdKafka::Headers::create();
  for (const auto& [name, value] : record->headers) {
    headers->add(name, value);
  }
  auto* opaque = new PublishDone(std::move(done));
  const RdKafka::ErrorCode code =
      producer_->produce(settings_.agent_events_topic, RdKafka::Topic::PARTITION_UA,
                         RdKafka::Producer::RK_MSG_COPY, const_cast<char*>(record->value.data()),
                         record->value.size(), nullptr, 0, 0, headers, opaque);
  if (code != RdKafka::ERR_NO_ERROR) {
    delete headers;  // ownership passes to librdkafka only on success
    std::unique_ptr<PublishDone> owned(opaque);
    std::move (*owned)(
        absl::UnavailableError(absl::StrCat("kafka: produce failed: ", RdKafka::err2str(code))));
  }
}

void KafkaAgentTransport::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) {
      return;
    }
    stopped_ = true;
  }
  running_ = false;
  if (thread_.joinable()) {
    thread_.join();
  }
  connected_ = false;
  if (producer_ != nullptr) {
    producer_->flush(5'000);
    producer_->purge(RdKafka::Producer::PURGE_QUEUE | RdKafka::Producer::PURGE_INFLIGHT);
    producer_->poll(0);  // runs the delivery reports of purged messages
  }
  if (consumer_ != nullptr) {
    consumer_->close();
  }
}

}  // namespace mmi::fleet_sim
