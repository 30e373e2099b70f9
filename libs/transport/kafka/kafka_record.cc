#include "libs/transport/kafka/kafka_record.h"

#include <string>
#include <utility>

namespace mmi::transport {

cloudevents::KafkaRecord ToKafkaRecord(RdKafka::Message& message) {
  cloudevents::KafkaRecord record;
  record.topic = message.topic_name();
  if (message.key() != nullptr) {
    record.key = *message.key();
  }
  if (message.payload() != nullptr) {
    record.value.assign(static_cast<const char*>(message.payload()), message.len());
  }
  if (const RdKafka::Headers* headers = message.headers(); headers != nullptr) {
    for (const RdKafka::Headers::Header& header : headers->get_all()) {
      std::string value;
      if (header.value() != nullptr) {
        value.assign(static_cast<const char*>(header.value()), header.value_size());
      }
      record.headers.emplace_back(header.key(), std::move(value));
    }
  }
  return record;
}

std::size_t WireSize(const cloudevents::KafkaRecord& record) {
  std::size_t size = record.value.size() + (record.key.has_value() ? record.key->size() : 0);
  for (const auto& [name, value] : record.headers) {
    size += name.size() + value.size();
  }
  return size;
}

}  // namespace mmi::transport
