// The status sink end to end on real peers (hub kube-apiserver, PostgreSQL, and mosquitto or
// Kafka, started by tests/peers/bin), fed by sink_publisher, a separate process that publishes
// pre-encoded status events as fast as the broker takes them. The sink runs in this process as
// the service runs it (StatusSinkApp), with an intake queue large enough to hold the whole run,
// so that it works at its own pace and drops nothing.
//
// Reported: events/s through the sink (from the first poll that saw an event handled to the last
// event, counting those handled in between) and CPU per event of each
// group of sink threads, from /proc/self/task/*/schedstat: the transport's threads (the MQTT
// subscriber's "mqtt-sub"; "kafka-consume" and librdkafka's "rdk:*"), the loop
// ("status-sink": decode, id lookup, coalesce, write dispatch), the store workers
// ("status-store": lookups, persist) and the hub writers ("status-writers").
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/sink/status_events.h"

namespace mmi::bench {

struct RunSettings {
  std::string transport = "mqtt";  // mqtt | kafka
  EventShape shape;
  std::size_t events = 20'000;
  std::string publisher;  // path of the sink_publisher binary
  // Every event waits in the broker before the sink starts, so that the publisher cannot be the
  // bound: the sink's own intake capacity. Its CPU then includes its start-up. Kafka: the topic
  // keeps them (the sink's consumer starts at the earliest offset). MQTT: a first start of the
  // sink, with a persistent session (sessionExpiry 1 h), subscribes and stops; the broker queues
  // every event for that session (start-mosquitto: max_queued_messages 1,000,000) and the second
  // start resumes it.
  bool prefill = false;
};

struct ThreadGroupCost {
  std::string group;
  double us_per_event = 0;
};

struct RunResult {
  std::size_t handled = 0;  // events the sink handled (mmi_status_events_received_total)
  double seconds = 0;       // first to last handled
  double events_per_second = 0;
  double publisher_events_per_second = 0;
  std::size_t hub_writes = 0;  // mmi_status_updates_total{result="ok"}
  std::vector<ThreadGroupCost> groups;
  double total_us_per_event = 0;
};

// Starts the peers, the sink and the publisher; blocks until every event was handled (or a
// deadline passed: kDeadlineExceeded). Peers are stopped before returning.
absl::StatusOr<RunResult> RunSink(const RunSettings& settings);

}  // namespace mmi::bench
