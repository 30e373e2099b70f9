#include "libs/transport/kafka/internal/kafka_client.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "libs/transport/kafka/internal/kafka_config.h"

namespace mmi::transport::internal {
namespace {

// The configuration of a `kind` client with `event_cb` installed.
absl::StatusOr<std::unique_ptr<RdKafka::Conf>> ClientConf(const KafkaSettings& settings,
                                                          KafkaClientKind kind,
                                                          RdKafka::EventCb* event_cb) {
  if (absl::Status s = ValidateKafkaSettings(settings); !s.ok()) {
    return s;
  }
  auto conf = MakeKafkaConf(settings, kind);
  if (!conf.ok()) {
    return conf.status();
  }
  SetKafkaCallback(**conf, "event_cb", event_cb);
  return conf;
}

template <typename Client>
absl::StatusOr<std::unique_ptr<Client>> Created(Client* client, const char* what,
                                                const std::string& error) {
  if (client == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("transport.kafka: cannot create the Kafka ", what, ": ", error));
  }
  return std::unique_ptr<Client>(client);
}

}  // namespace

absl::StatusOr<std::unique_ptr<RdKafka::Producer>> CreateKafkaProducer(
    const KafkaSettings& settings, RdKafka::DeliveryReportCb* dr_cb, RdKafka::EventCb* event_cb) {
  auto conf = ClientConf(settings, KafkaClientKind::kProducer, event_cb);
  if (!conf.ok()) {
    return conf.status();
  }
  SetKafkaCallback(**conf, "dr_cb", dr_cb);
  std::string error;
  return Created(RdKafka::Producer::create(conf->get(), error), "producer", error);
}

absl::StatusOr<std::unique_ptr<RdKafka::KafkaConsumer>> CreateKafkaConsumer(
    const KafkaSettings& settings, RdKafka::RebalanceCb* rebalance_cb, RdKafka::EventCb* event_cb) {
  auto conf = ClientConf(settings, KafkaClientKind::kConsumer, event_cb);
  if (!conf.ok()) {
    return conf.status();
  }
  SetKafkaCallback(**conf, "rebalance_cb", rebalance_cb);
  std::string error;
  return Created(RdKafka::KafkaConsumer::create(conf->get(), error), "consumer", error);
}

bool KafkaBrokerReachable(RdKafka::Handle& client) {
  RdKafka::Metadata* metadata = nullptr;
  const bool reachable = client.metadata(false, nullptr, &metadata, 500) == RdKafka::ERR_NO_ERROR;
  delete metadata;
  return reachable;
}

bool LogKafkaEvent(const log::Logger& logger, KafkaClientKind kind, RdKafka::Event& event) {
  const bool producer = kind == KafkaClientKind::kProducer;
  switch (event.type()) {
    case RdKafka::Event::EVENT_ERROR:
      if (producer && event.fatal()) {
        logger.Error("fatal Kafka producer error; restart the service", {{"error", event.str()}});
      } else {
        logger.Warn(producer ? "Kafka producer error" : "Kafka consumer error",
                    {{"error", event.str()}});
      }
      return event.err() == RdKafka::ERR__ALL_BROKERS_DOWN;
    case RdKafka::Event::EVENT_LOG:
      logger.Log(event.severity() <= RdKafka::Event::EVENT_SEVERITY_WARNING ? log::Level::kWarn
                                                                            : log::Level::kDebug,
                 "librdkafka", {{"facility", event.fac()}, {"msg", event.str()}});
      return false;
    default:
      return false;
  }
}

}  // namespace mmi::transport::internal
