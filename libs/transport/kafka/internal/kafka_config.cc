#include "libs/transport/kafka/internal/kafka_config.h"

#include <cstdlib>
#include <iostream>
#include <map>

#include "absl/strings/str_cat.h"

namespace mmi::transport::internal {
namespace {

absl::Status Set(RdKafka::Conf& conf, const std::string& key, const std::string& value,
                 const std::string& field) {
  std::string error;
  if (conf.set(key, value, error) != RdKafka::Conf::CONF_OK) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": librdkafka rejected ", key, ": ", error));
  }
  return absl::OkStatus();
}

template <typename Cb>
void SetCallback(RdKafka::Conf& conf, const char* name, Cb* cb) {
  std::string error;
  if (conf.set(name, cb, error) != RdKafka::Conf::CONF_OK) {
    std::cerr << "BUG: cannot set librdkafka " << name << ": " << error << std::endl;
    std::abort();
  }
}

}  // namespace

void SetKafkaCallback(RdKafka::Conf& conf, const char* name, RdKafka::DeliveryReportCb* cb) {
  SetCallback(conf, name, cb);
}
void SetKafkaCallback(RdKafka::Conf& conf, const char* name, RdKafka::EventCb* cb) {
  SetCallback(conf, name, cb);
}
void SetKafkaCallback(RdKafka::Conf& conf, const char* name, RdKafka::RebalanceCb* cb) {
  SetCallback(conf, name, cb);
}

absl::StatusOr<std::unique_ptr<RdKafka::Conf>> MakeKafkaConf(const KafkaSettings& settings,
                                                             KafkaClientKind kind) {
  std::unique_ptr<RdKafka::Conf> conf(RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
  const std::string path = "transport.kafka";
  // (key, value, field path for errors), in order.
  std::vector<std::tuple<std::string, std::string, std::string>> props = {
      {"bootstrap.servers", settings.bootstrap_servers, path + ".bootstrapServer"},
      {"client.id",
       absl::StrCat(settings.source_id, kind == KafkaClientKind::kProducer ? "-pub" : "-sub"),
       path + ".sourceId"},
      {"socket.keepalive.enable", "true", path},
      {"log.connection.close", "false", path},
  };
  const bool sasl = !settings.sasl.mechanism.empty();
  if (settings.tls.enabled || sasl) {
    const char* protocol = settings.tls.enabled ? (sasl ? "sasl_ssl" : "ssl") : "sasl_plaintext";
    props.emplace_back("security.protocol", protocol, path + ".tls.enabled");
  }
  if (!settings.tls.ca_file.empty()) {
    props.emplace_back("ssl.ca.location", settings.tls.ca_file, path + ".tls.caFile");
  }
  if (!settings.tls.client_cert_file.empty()) {
    props.emplace_back("ssl.certificate.location", settings.tls.client_cert_file,
                       path + ".tls.clientCertFile");
    props.emplace_back("ssl.key.location", settings.tls.client_key_file,
                       path + ".tls.clientKeyFile");
  }
  if (sasl) {
    props.emplace_back("sasl.mechanisms", settings.sasl.mechanism, path + ".sasl.mechanism");
    props.emplace_back("sasl.username", settings.sasl.username, path + ".sasl.username");
    props.emplace_back("sasl.password", settings.sasl.password, path + ".sasl.password");
  }
  if (kind == KafkaClientKind::kProducer) {
    props.emplace_back("enable.idempotence", "true", path);
    props.emplace_back("message.timeout.ms", std::to_string(settings.delivery_timeout.count()),
                       path + ".deliveryTimeout");
  } else {
    props.emplace_back("group.id",
                       settings.group_id.empty() ? settings.source_id : settings.group_id,
                       path + ".groupID");
    props.emplace_back("auto.offset.reset", "earliest", path);
    props.emplace_back("enable.auto.commit", "true", path);
    props.emplace_back("enable.auto.offset.store", "false", path);
    props.emplace_back("enable.partition.eof", "false", path);
    props.emplace_back("queued.max.messages.kbytes", "32768", path);
    // A subscribed topic that does not exist yet (the broker's admin creates it after we start)
    // is assigned once metadata is refreshed: every 10 s instead of librdkafka's 5 min.
    props.emplace_back("topic.metadata.refresh.interval.ms", "10000", path);
  }
  for (const auto& [key, value] : settings.advanced_config) {
    props.emplace_back(key, value, absl::StrCat(path, ".advancedConfig.", key));
  }
  for (const auto& [key, value, field] : props) {
    if (absl::Status s = Set(*conf, key, value, field); !s.ok()) {
      return s;
    }
  }
  return conf;
}

absl::Status KafkaStatus(RdKafka::ErrorCode code, const std::string& context) {
  if (code == RdKafka::ERR_NO_ERROR) {
    return absl::OkStatus();
  }
  const std::string message = absl::StrCat(context, ": ", RdKafka::err2str(code),
                                           " (librdkafka error ", static_cast<int>(code), ")");
  switch (code) {
    case RdKafka::ERR__QUEUE_FULL:
      return absl::ResourceExhaustedError(message + "; the producer queue is full, retry later");
    case RdKafka::ERR_MSG_SIZE_TOO_LARGE:
      return absl::InvalidArgumentError(message + "; raise message.max.bytes or shrink the event");
    case RdKafka::ERR__MSG_TIMED_OUT:
    case RdKafka::ERR__TIMED_OUT:
    case RdKafka::ERR_REQUEST_TIMED_OUT:
      return absl::DeadlineExceededError(message);
    case RdKafka::ERR_TOPIC_AUTHORIZATION_FAILED:
    case RdKafka::ERR_CLUSTER_AUTHORIZATION_FAILED:
    case RdKafka::ERR_GROUP_AUTHORIZATION_FAILED:
      return absl::PermissionDeniedError(message + "; check the broker ACLs");
    case RdKafka::ERR__UNKNOWN_TOPIC:
    case RdKafka::ERR_UNKNOWN_TOPIC_OR_PART:
      return absl::FailedPreconditionError(message + "; create the topic or enable auto-creation");
    default:
      return absl::UnavailableError(message);
  }
}

}  // namespace mmi::transport::internal
