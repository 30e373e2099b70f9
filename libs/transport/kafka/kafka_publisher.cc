#include "libs/transport/kafka/kafka_publisher.h"

#include <pthread.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "libs/cloudevents/kafka_codec.h"
#include "libs/transport/kafka/internal/kafka_client.h"
#include "libs/transport/kafka/internal/kafka_config.h"

namespace mmi::transport {
namespace {

const log::Logger& Log() {
  static const log::Logger logger("transport.kafka");
  return logger;
}

}  // namespace

// Travels through librdkafka as the message opaque; owned by whoever completes it.
struct KafkaPublisher::Delivery {
  PublishCallback done;
  std::chrono::steady_clock::time_point started;
  std::string event_id;
};

void KafkaPublisher::Callbacks::dr_cb(RdKafka::Message& message) { owner_->OnDelivery(message); }
void KafkaPublisher::Callbacks::event_cb(RdKafka::Event& event) { owner_->OnEvent(event); }

KafkaPublisher::KafkaPublisher(KafkaSettings settings, Clock& clock, prometheus::Registry& registry)
    : settings_(std::move(settings)),
      clock_(clock),
      metrics_(registry, "kafka", ClientRole::kPublisher) {}

KafkaPublisher::~KafkaPublisher() { Stop(); }

absl::Status KafkaPublisher::Start() {
  absl::WriterMutexLock lock(&lifecycle_mu_);
  if (started_ || stopped_) {
    return absl::FailedPreconditionError("KafkaPublisher::Start called twice or after Stop");
  }
  absl::StatusOr<std::unique_ptr<RdKafka::Producer>> producer =
      internal::CreateKafkaProducer(settings_, &rd_callbacks_, &rd_callbacks_);
  if (!producer.ok()) {
    return producer.status();
  }
  producer_ = *std::move(producer);
  started_ = true;
  polling_ = true;
  metrics_.SetConnected(false);
  poll_thread_ = std::thread([this] { PollLoop(); });
  pthread_setname_np(poll_thread_.native_handle(), "kafka-pub-poll");
  Log().Info("Kafka publisher started",
             {{"summary", RedactedSummary(TransportSettings(settings_))}});
  return absl::OkStatus();
}

void KafkaPublisher::Publish(cloudevents::Event event, PublishCallback done) {
  auto delivery =
      std::make_unique<Delivery>(Delivery{std::move(done), clock_.MonotonicNow(), event.id});
  absl::ReaderMutexLock lock(&lifecycle_mu_);
  if (!started_ || stopped_) {
    Finish(std::move(delivery), absl::FailedPreconditionError(
                                    "KafkaPublisher: Publish() before Start() or after Stop()"));
    return;
  }
  if (event.source != settings_.source_id) {
    Finish(std::move(delivery),
           absl::InvalidArgumentError(absl::StrCat(
               "event ", event.id, " has source \"", event.source,
               "\" but this transport publishes as source id \"", settings_.source_id, "\"")));
    return;
  }
  absl::StatusOr<cloudevents::KafkaRecord> record =
      cloudevents::EncodeKafka(event, settings_.limits);
  if (!record.ok()) {
    Finish(std::move(delivery), absl::InvalidArgumentError(absl::StrCat(
                                    "cannot encode event ", event.id,
                                    " for Kafka: ", std::string(record.status().message()))));
    return;
  }
  // The codec names the scheme's topics; the settings may rename them.
  const std::string topic = record->topic == cloudevents::kKafkaAgentEventsTopic
                                ? settings_.agent_events_topic
                                : settings_.source_events_topic;
  std::optional<std::string> key = record->key;
  if (settings_.key_by_cluster) {
    if (absl::StatusOr<std::string> cluster = event.ClusterName();
        cluster.ok() && !cluster->empty()) {
      key = *cluster;
    }
  }
  RdKafka::Headers* headers = RdKafka::Headers::create();
  for (const auto& [name, value] : record->headers) {
    headers->add(name, value.data(), value.size());
  }
  Delivery* opaque = delivery.release();
  const RdKafka::ErrorCode code =
      producer_->produce(topic, RdKafka::Topic::PARTITION_UA, RdKafka::Producer::RK_MSG_COPY,
                         const_cast<char*>(record->value.data()), record->value.size(),
                         key.has_value() ? key->data() : nullptr, key.has_value() ? key->size() : 0,
                         0, headers, opaque);
  if (code != RdKafka::ERR_NO_ERROR) {
    delete headers;  // ownership passes to librdkafka only on success
    Finish(std::unique_ptr<Delivery>(opaque),
           internal::KafkaStatus(code, absl::StrCat("producing event ", event.id, " to ", topic)));
  }
}

void KafkaPublisher::Stop() {
  {
    absl::WriterMutexLock lock(&lifecycle_mu_);
    if (!internal::BeginPublisherStop(started_, stopped_, callbacks_)) {
      return;
    }
  }
  polling_ = false;
  if (poll_thread_.joinable()) {
    poll_thread_.join();
  }
  // Deliver what can still be delivered, then fail the rest (their reports say ERR__PURGE_*).
  const RdKafka::ErrorCode flushed =
      producer_->flush(static_cast<int>(settings_.flush_timeout.count()));
  if (flushed != RdKafka::ERR_NO_ERROR) {
    Log().Warn("Kafka flush did not complete; failing the remaining events",
               {{"in_queue", producer_->outq_len()}});
    producer_->purge(RdKafka::Producer::PURGE_QUEUE | RdKafka::Producer::PURGE_INFLIGHT |
                     RdKafka::Producer::PURGE_NON_BLOCKING);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (producer_->outq_len() > 0 && std::chrono::steady_clock::now() < deadline) {
      producer_->poll(50);
    }
  }
  producer_.reset();
  SetConnected(false);
  callbacks_.Stop();
  Log().Info("Kafka publisher stopped");
}

void KafkaPublisher::OnDelivery(RdKafka::Message& message) {
  std::unique_ptr<Delivery> delivery(static_cast<Delivery*>(message.msg_opaque()));
  if (delivery == nullptr) {
    return;
  }
  if (message.err() == RdKafka::ERR_NO_ERROR) {
    SetConnected(true);
  }
  const std::string context =
      absl::StrCat("delivering event ", delivery->event_id, " to ", message.topic_name());
  Finish(std::move(delivery), internal::KafkaStatus(message.err(), context));
}

void KafkaPublisher::OnEvent(RdKafka::Event& event) {
  if (internal::LogKafkaEvent(Log(), internal::KafkaClientKind::kProducer, event)) {
    SetConnected(false);
  }
}

void KafkaPublisher::Finish(std::unique_ptr<Delivery> delivery, absl::Status status) {
  metrics_.RecordPublish(status, clock_.MonotonicNow() - delivery->started);
  if (!status.ok()) {
    Log().Debug("publish failed",
                {{"event_id", delivery->event_id}, {"error", std::string(status.message())}});
  }
  callbacks_.Post([done = std::move(delivery->done), status = std::move(status)]() mutable {
    std::move(done)(std::move(status));
  });
}

void KafkaPublisher::PollLoop() {
  while (polling_) {
    producer_->poll(100);
    if (!connected_) {
      Probe();
    }
  }
}

void KafkaPublisher::Probe() {
  const auto now = std::chrono::steady_clock::now();
  if (now < next_probe_) {
    return;
  }
  next_probe_ = now + std::chrono::seconds(1);
  if (internal::KafkaBrokerReachable(*producer_)) {
    SetConnected(true);
  }
}

void KafkaPublisher::SetConnected(bool connected) {
  const bool was = connected_.exchange(connected);
  if (was == connected) {
    return;
  }
  metrics_.SetConnected(connected);
  if (connected) {
    if (ever_connected_.exchange(true)) {
      metrics_.RecordReconnect();
    }
    Log().Info("connected to Kafka", {{"bootstrap", settings_.bootstrap_servers}});
  } else {
    Log().Warn("lost every Kafka broker connection; events wait in the producer queue",
               {{"bootstrap", settings_.bootstrap_servers}});
  }
}

}  // namespace mmi::transport
