// Kafka binding of the final OCM scheme (§5.1, §5.3). No Kafka client dependency: the transport
// copies `KafkaRecord` into a librdkafka message.
//
// Topics: a source produces every spec event and every status resync request to `sourceevents`
// and consumes `agentevents`; an agent produces status events and spec resync requests to
// `agentevents` and consumes `sourceevents`. Records have no key (default partitioner). The
// consumer group defaults to the source ID / agent ID.
//
// Binary mode: value = data bytes; header `content-type` = `datacontenttype`; every other
// attribute and extension = header `ce-<name>` with the canonical string value (hyphen, as the
// Go binding writes, not the `ce_` of the CloudEvents Kafka spec). Decoding lower-cases header
// names; `content-type` starting with `application/cloudevents` selects structured mode (value =
// JSON format event), else `ce-specversion` selects binary mode, else kInvalidArgument. A
// repeated `ce-` header is kInvalidArgument. Broker metadata (`kafkaoffset`, ...) is not added.
// Thread-safe (pure functions).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "libs/cloudevents/codec_options.h"
#include "libs/cloudevents/event.h"

namespace mmi::cloudevents {

struct KafkaRecord {
  std::string topic;
  std::optional<std::string> key;
  std::string value;
  std::vector<std::pair<std::string, std::string>> headers;
  friend bool operator==(const KafkaRecord&, const KafkaRecord&) = default;
};

inline constexpr std::string_view kKafkaSourceEventsTopic = "sourceevents";
inline constexpr std::string_view kKafkaAgentEventsTopic = "agentevents";

enum class KafkaRole { kSource, kAgent };

// The topic an event of this type is produced to: `sourceevents` for spec events other than
// resync_request and for status resync_request; `agentevents` for the rest.
std::string_view KafkaTopicFor(const EventType& type);
// The topic a party produces to / consumes from.
std::string_view KafkaProduceTopic(KafkaRole role);
std::string_view KafkaConsumeTopic(KafkaRole role);
// Default consumer group.id: the party's own ID (source ID or agent ID).
std::string KafkaDefaultGroupId(std::string_view own_id);
// Final scheme: no key (null key, librdkafka's default partitioner).
std::optional<std::string> KafkaMessageKey(const Event& event);

// Binary-mode record; the topic comes from KafkaTopicFor(event type) (kInvalidArgument when the
// type does not parse). `value` is empty when the event has no data.
absl::StatusOr<KafkaRecord> EncodeKafka(const Event& event, const CodecLimits& limits = {});

absl::StatusOr<Event> DecodeKafka(const KafkaRecord& record, const CodecLimits& limits = {});

}  // namespace mmi::cloudevents
