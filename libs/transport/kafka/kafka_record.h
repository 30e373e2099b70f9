// Conversion of a consumed librdkafka message into the codec's plain KafkaRecord.
#pragma once

#include <librdkafka/rdkafkacpp.h>

#include <cstddef>

#include "libs/cloudevents/kafka_codec.h"

namespace mmi::transport {

// The topic, key (when set), value and headers (in order; a null header value becomes "") of
// `message`.
cloudevents::KafkaRecord ToKafkaRecord(RdKafka::Message& message);

// Value + key + header bytes: what the size limit is checked against.
std::size_t WireSize(const cloudevents::KafkaRecord& record);

}  // namespace mmi::transport
