#include "libs/cloudevents/kafka_codec.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "libs/cloudevents/internal/attributes.h"
#include "libs/cloudevents/json_format.h"

namespace mmi::cloudevents {
namespace {

constexpr std::string_view kContentTypeHeader = "content-type";

std::size_t RecordSize(const KafkaRecord& record) {
  std::size_t size = record.value.size() + (record.key.has_value() ? record.key->size() : 0);
  for (const auto& [name, value] : record.headers) {
    size += name.size() + value.size();
  }
  return size;
}

}  // namespace

std::string_view KafkaTopicFor(const EventType& type) {
  const bool source_to_agent = (type.subresource == Subresource::kSpec)
                                   ? type.action != Action::kResyncRequest
                                   : type.action == Action::kResyncRequest;
  return source_to_agent ? kKafkaSourceEventsTopic : kKafkaAgentEventsTopic;
}

std::string_view KafkaProduceTopic(KafkaRole role) {
  return role == KafkaRole::kSource ? kKafkaSourceEventsTopic : kKafkaAgentEventsTopic;
}

std::string_view KafkaConsumeTopic(KafkaRole role) {
  return role == KafkaRole::kSource ? kKafkaAgentEventsTopic : kKafkaSourceEventsTopic;
}

std::string KafkaDefaultGroupId(std::string_view own_id) { return std::string(own_id); }

std::optional<std::string> KafkaMessageKey(const Event& /*event*/) { return std::nullopt; }

absl::StatusOr<KafkaRecord> EncodeKafka(const Event& event, const CodecLimits& limits) {
  if (auto status = internal::ValidateForEncoding(event); !status.ok()) {
    return status;
  }
  if (auto status = internal::CheckBinaryModeContentType(event.data_content_type); !status.ok()) {
    return status;
  }
  auto type = event.ParsedType();
  if (!type.ok()) {
    return type.status();
  }
  KafkaRecord record;
  record.topic = std::string(KafkaTopicFor(*type));
  record.key = KafkaMessageKey(event);
  if (event.data_content_type.has_value()) {
    record.headers.emplace_back(std::string(kContentTypeHeader), *event.data_content_type);
  }
  for (auto& header : internal::BinaryAttributes(event)) {
    record.headers.push_back(std::move(header));
  }
  if (event.data.has_value()) {
    record.value = *event.data;
  }
  if (const std::size_t size = RecordSize(record); size > limits.max_event_bytes) {
    return internal::SizeLimitError("encoded Kafka record", size, limits);
  }
  return record;
}

absl::StatusOr<Event> DecodeKafka(const KafkaRecord& record, const CodecLimits& limits) {
  if (const std::size_t size = RecordSize(record); size > limits.max_event_bytes) {
    return internal::SizeLimitError("Kafka record", size, limits);
  }
  std::optional<std::string> content_type;
  for (const auto& [name, value] : record.headers) {
    if (internal::AsciiLower(name) == kContentTypeHeader) {
      if (content_type.has_value()) {
        return absl::InvalidArgumentError("Kafka header \"content-type\" appears more than once");
      }
      content_type = value;
    }
  }
  if (content_type.has_value() && IsStructuredContentType(*content_type)) {
    return DecodeStructuredJson(record.value, limits);
  }
  return internal::DecodeBinaryAttributes(record.headers, content_type, record.value,
                                          "Kafka header");
}

}  // namespace mmi::cloudevents
