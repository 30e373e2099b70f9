// librdkafka configuration built from KafkaSettings, and librdkafka error codes mapped to the
// STYLE.md status codes.
#pragma once

#include <librdkafka/rdkafkacpp.h>

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "libs/transport/settings.h"

namespace mmi::transport::internal {

enum class KafkaClientKind { kProducer, kConsumer };

// Global configuration for one client: bootstrap servers, client.id `<sourceId>-pub|-sub`,
// TLS/SASL pass-through, then for a producer enable.idempotence=true (acks=all, in-order
// retries) and message.timeout.ms = deliveryTimeout; for a consumer group.id (default the
// source id, §5.1), auto.offset.reset=earliest, enable.auto.offset.store=false (we store only
// acknowledged offsets), enable.auto.commit=true and topic.metadata.refresh.interval.ms=10000 (a
// topic created after start is consumed within seconds). advancedConfig is applied last.
// kInvalidArgument naming the field when librdkafka rejects a property.
absl::StatusOr<std::unique_ptr<RdKafka::Conf>> MakeKafkaConf(const KafkaSettings& settings,
                                                             KafkaClientKind kind);

// Sets a callback object property (dr_cb, event_cb, rebalance_cb); aborts on failure (a bug).
void SetKafkaCallback(RdKafka::Conf& conf, const char* name, RdKafka::DeliveryReportCb* cb);
void SetKafkaCallback(RdKafka::Conf& conf, const char* name, RdKafka::EventCb* cb);
void SetKafkaCallback(RdKafka::Conf& conf, const char* name, RdKafka::RebalanceCb* cb);

// Produce / delivery errors: queue full -> kResourceExhausted; message too large ->
// kInvalidArgument; timed out -> kDeadlineExceeded; authorization -> kPermissionDenied; unknown
// topic -> kFailedPrecondition; everything else (transport, purge at Stop) -> kUnavailable.
absl::Status KafkaStatus(RdKafka::ErrorCode code, const std::string& context);

}  // namespace mmi::transport::internal
