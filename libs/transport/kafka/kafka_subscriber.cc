#include "libs/transport/kafka/kafka_subscriber.h"

#include <pthread.h>

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "libs/cloudevents/kafka_codec.h"
#include "libs/transport/internal/intake.h"
#include "libs/transport/kafka/internal/kafka_client.h"
#include "libs/transport/kafka/internal/kafka_config.h"
#include "libs/transport/kafka/kafka_record.h"

namespace mmi::transport {
namespace {

const log::Logger& Log() {
  static const log::Logger logger("transport.kafka");
  return logger;
}

void DestroyPartitions(std::vector<RdKafka::TopicPartition*>& partitions) {
  RdKafka::TopicPartition::destroy(partitions);
}

}  // namespace

void KafkaSubscriber::Callbacks::rebalance_cb(RdKafka::KafkaConsumer* consumer,
                                              RdKafka::ErrorCode err,
                                              std::vector<RdKafka::TopicPartition*>& partitions) {
  owner_->OnRebalance(consumer, err, partitions);
}

void KafkaSubscriber::Callbacks::event_cb(RdKafka::Event& event) { owner_->OnEvent(event); }

KafkaSubscriber::KafkaSubscriber(KafkaSettings settings, prometheus::Registry& registry)
    : settings_(std::move(settings)),
      intake_log_(Log(), RealClock::Instance()),
      metrics_(registry, "kafka", ClientRole::kSubscriber) {}

KafkaSubscriber::~KafkaSubscriber() { Stop(); }

absl::Status KafkaSubscriber::Start(EventHandler handler, SubscribedHook on_subscribed) {
  if (!handler) {
    return absl::InvalidArgumentError("KafkaSubscriber::Start: handler must be set");
  }
  absl::MutexLock lock(&mu_);
  if (started_ || stopped_) {
    return absl::FailedPreconditionError("KafkaSubscriber::Start called twice or after Stop");
  }
  absl::StatusOr<std::unique_ptr<RdKafka::KafkaConsumer>> consumer =
      internal::CreateKafkaConsumer(settings_, &rd_callbacks_, &rd_callbacks_);
  if (!consumer.ok()) {
    return consumer.status();
  }
  consumer_ = *std::move(consumer);
  if (RdKafka::ErrorCode code = consumer_->subscribe({settings_.agent_events_topic});
      code != RdKafka::ERR_NO_ERROR) {
    return internal::KafkaStatus(code,
                                 absl::StrCat("subscribing to ", settings_.agent_events_topic));
  }
  handler_ = std::move(handler);
  on_subscribed_ = std::move(on_subscribed);
  started_ = true;
  running_ = true;
  metrics_.SetConnected(false);
  thread_ = std::thread([this] { Loop(); });
  pthread_setname_np(thread_.native_handle(), "kafka-consume");
  Log().Info("Kafka subscriber started",
             {{"topic", settings_.agent_events_topic},
              {"group", settings_.group_id.empty() ? settings_.source_id : settings_.group_id}});
  return absl::OkStatus();
}

void KafkaSubscriber::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) {
      return;
    }
    stopped_ = true;
    if (!started_) {
      return;
    }
  }
  running_ = false;
  if (thread_.joinable()) {
    thread_.join();
  }
  StoreAcked();
  tracker_->Close();
  CommitNow();
  consumer_->close();
  consumer_.reset();
  SetConnected(false);
  Log().Info("Kafka subscriber stopped");
}

void KafkaSubscriber::Loop() {
  while (running_) {
    intake_log_.Flush();
    std::unique_ptr<RdKafka::Message> message(consumer_->consume(100));
    switch (message->err()) {
      case RdKafka::ERR_NO_ERROR:
        SetConnected(true);
        Handle(*message);
        break;
      case RdKafka::ERR__TIMED_OUT:
      case RdKafka::ERR__PARTITION_EOF:
        break;
      default:
        Log().Warn("Kafka consume error", {{"error", message->errstr()}});
        break;
    }
    StoreAcked();
    if (!connected_) {
      Probe();
    }
  }
}

void KafkaSubscriber::Handle(RdKafka::Message& message) {
  const cloudevents::KafkaRecord record = ToKafkaRecord(message);
  const internal::OffsetTracker::Delivery delivery =
      tracker_->Delivered(message.partition(), message.offset());
  std::weak_ptr<internal::OffsetTracker> tracker = tracker_;
  AckFn ack = [tracker, delivery]() {
    if (auto t = tracker.lock()) {
      t->Ack(delivery);
    }
  };
  const std::string where =
      absl::StrCat(record.topic, "/", message.partition(), "@", message.offset());
  internal::Intake(
      WireSize(record), settings_.limits.max_event_bytes,
      [&]() { return cloudevents::DecodeKafka(record, settings_.limits); }, metrics_, intake_log_,
      where, handler_, std::move(ack));
}

void KafkaSubscriber::StoreAcked() {
  const auto committable = tracker_->TakeCommittable();
  if (committable.empty()) {
    return;
  }
  std::vector<RdKafka::TopicPartition*> offsets;
  offsets.reserve(committable.size());
  for (const auto& [partition, offset] : committable) {
    offsets.push_back(
        RdKafka::TopicPartition::create(settings_.agent_events_topic, partition, offset));
  }
  if (RdKafka::ErrorCode code = consumer_->offsets_store(offsets); code != RdKafka::ERR_NO_ERROR) {
    // Typically the partition was just revoked: the new owner re-reads from the last commit.
    Log().Debug("could not store Kafka offsets", {{"error", RdKafka::err2str(code)}});
  }
  DestroyPartitions(offsets);
}

void KafkaSubscriber::CommitNow() {
  const RdKafka::ErrorCode code = consumer_->commitSync();
  if (code != RdKafka::ERR_NO_ERROR && code != RdKafka::ERR__NO_OFFSET) {
    Log().Warn("Kafka offset commit failed; acknowledged events may be redelivered",
               {{"error", RdKafka::err2str(code)}});
  }
}

void KafkaSubscriber::OnRebalance(RdKafka::KafkaConsumer* consumer, RdKafka::ErrorCode err,
                                  std::vector<RdKafka::TopicPartition*>& partitions) {
  const bool cooperative = consumer->rebalance_protocol() == "COOPERATIVE";
  if (err == RdKafka::ERR__ASSIGN_PARTITIONS) {
    for (RdKafka::TopicPartition* tp : partitions) {
      tracker_->Assign(tp->partition());
    }
    if (cooperative) {
      if (RdKafka::Error* error = consumer->incremental_assign(partitions); error != nullptr) {
        Log().Error("Kafka incremental assign failed", {{"error", error->str()}});
        delete error;
      }
    } else {
      consumer->assign(partitions);
    }
    Log().Info("Kafka partitions assigned", {{"count", static_cast<int>(partitions.size())}});
    SetConnected(true);  // runs the hook with resubscribed=true after a reconnect
    if (!ever_subscribed_) {
      ever_subscribed_ = true;
      if (on_subscribed_) {
        on_subscribed_(false);
      }
    }
    return;
  }
  // Revoke (or a rebalance error): commit what was acknowledged, then let go.
  StoreAcked();
  CommitNow();
  for (RdKafka::TopicPartition* tp : partitions) {
    tracker_->Revoke(tp->partition());
  }
  if (cooperative) {
    if (RdKafka::Error* error = consumer->incremental_unassign(partitions); error != nullptr) {
      delete error;
    }
  } else {
    consumer->unassign();
  }
  Log().Info("Kafka partitions revoked", {{"count", static_cast<int>(partitions.size())}});
}

void KafkaSubscriber::OnEvent(RdKafka::Event& event) {
  if (internal::LogKafkaEvent(Log(), internal::KafkaClientKind::kConsumer, event)) {
    SetConnected(false);
  }
}

void KafkaSubscriber::Probe() {
  const auto now = std::chrono::steady_clock::now();
  if (now < next_probe_ || !ever_subscribed_) {
    return;
  }
  next_probe_ = now + std::chrono::seconds(1);
  if (internal::KafkaBrokerReachable(*consumer_)) {
    SetConnected(true);
  }
}

void KafkaSubscriber::SetConnected(bool connected) {
  const bool was = connected_.exchange(connected);
  if (was == connected) {
    return;
  }
  metrics_.SetConnected(connected);
  if (connected && ever_subscribed_) {
    metrics_.RecordReconnect();
    Log().Info("reconnected to Kafka", {{"bootstrap", settings_.bootstrap_servers}});
    // Kafka keeps what was produced meanwhile; the hook still tells the service, which may
    // decide a resync is cheap insurance.
    if (on_subscribed_ && running_) {
      on_subscribed_(true);
    }
  } else if (!connected) {
    Log().Warn("lost every Kafka broker connection", {{"bootstrap", settings_.bootstrap_servers}});
  }
}

}  // namespace mmi::transport
