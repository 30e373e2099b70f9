// The librdkafka client set-up and housekeeping shared by KafkaPublisher and KafkaSubscriber.
#pragma once

#include <librdkafka/rdkafkacpp.h>

#include <memory>

#include "absl/status/statusor.h"
#include "libs/common/log.h"
#include "libs/transport/kafka/internal/kafka_config.h"
#include "libs/transport/settings.h"

namespace mmi::transport::internal {

// Validates `settings` (ValidateKafkaSettings), builds the configuration (MakeKafkaConf),
// installs the callbacks (borrowed: they must outlive the client) and creates the client.
// kInvalidArgument naming the field, or saying librdkafka could not create the client.
absl::StatusOr<std::unique_ptr<RdKafka::Producer>> CreateKafkaProducer(
    const KafkaSettings& settings, RdKafka::DeliveryReportCb* dr_cb, RdKafka::EventCb* event_cb);
absl::StatusOr<std::unique_ptr<RdKafka::KafkaConsumer>> CreateKafkaConsumer(
    const KafkaSettings& settings, RdKafka::RebalanceCb* rebalance_cb, RdKafka::EventCb* event_cb);

// True when a metadata request through `client` is answered within 500 ms: a broker is
// reachable. Blocks for at most that long.
bool KafkaBrokerReachable(RdKafka::Handle& client);

// Logs an event from a `kind` client's event_cb: EVENT_LOG lines at kWarn (warning or worse) or
// kDebug; EVENT_ERROR as "Kafka producer|consumer error" at kWarn, except a fatal producer error
// (only the idempotent producer raises those), logged at kError since the service must restart.
// Returns true when the event says every broker connection is lost (ERR__ALL_BROKERS_DOWN).
bool LogKafkaEvent(const log::Logger& logger, KafkaClientKind kind, RdKafka::Event& event);

}  // namespace mmi::transport::internal
